package cloudrepo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
)

// defaultS3Region is the region used when none is configured: the AWS C++
// SDK's default, which Triton relies on, and what S3-compatible servers
// expect.
const defaultS3Region = "us-east-1"

// gcsReadScope is the OAuth scope requested with a Google credential file:
// reading objects is all a mirror does.
const gcsReadScope = "https://www.googleapis.com/auth/devstorage.read_only"

// transports records the HTTP transports a bucket's clients use and the
// connections the AWS client dials, so that Close can drop them (no
// goroutine outlives Close). The AWS SDK builds its own copy of the
// transport it is given, so its connections are tracked at the dialer.
type transports struct {
	mu sync.Mutex
	// mu protects the following.
	list   []*http.Transport
	conns  map[net.Conn]struct{}
	closed bool // closeIdle ran: a connection dialed later is closed at once
}

// make returns a new transport like http.DefaultTransport, recorded and
// tracked.
func (ts *transports) make() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	ts.track(tr)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.list = append(ts.list, tr)
	return tr
}

// track makes tr's connections known to closeIdle, whatever copies of tr
// are made: a copy keeps the dial function.
func (ts *transports) track(tr *http.Transport) {
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, ts: ts}
		ts.mu.Lock()
		if ts.closed {
			// A dial that finished after Close: net/http dials for a
			// request and, when another connection serves it first, puts
			// the new one in its idle pool afterwards, where nothing would
			// close it.
			ts.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		if ts.conns == nil {
			ts.conns = map[net.Conn]struct{}{}
		}
		ts.conns[tc] = struct{}{}
		ts.mu.Unlock()
		return tc, nil
	}
}

// trackedConn leaves its transports' set when closed.
type trackedConn struct {
	net.Conn
	ts *transports
}

func (c *trackedConn) Close() error {
	c.ts.mu.Lock()
	delete(c.ts.conns, c)
	c.ts.mu.Unlock()
	return c.Conn.Close()
}

// closeIdle drops the recorded transports' idle connections and closes the
// tracked ones, and any they dial later; it is called once no request is
// in flight, when the bucket closes.
func (ts *transports) closeIdle() {
	ts.mu.Lock()
	ts.closed = true
	list := slices.Clone(ts.list)
	conns := slices.Collect(maps.Keys(ts.conns))
	ts.mu.Unlock()
	for _, tr := range list {
		tr.CloseIdleConnections()
	}
	for _, c := range conns {
		c.Close()
	}
}

// openBucket connects to loc's bucket with cred; the clients' transports
// are recorded in ts. Nothing is sent over the network here.
func openBucket(ctx context.Context, loc location, cred credential, ts *transports, log *zap.Logger) (*blob.Bucket, error) {
	switch loc.scheme {
	case schemeS3:
		return openS3(ctx, loc, cred.s3, ts)
	case schemeGCS:
		return openGCS(ctx, loc, cred.gcsFile, ts.make())
	case schemeAzure:
		return openAzure(ctx, loc, cred.azure, ts.make(), log)
	}
	return nil, fmt.Errorf("unknown scheme %q", loc.scheme)
}

// openS3 builds the client Triton builds (CORE s3.h): explicit keys when
// both are set, else the named profile, else the SDK's default chain;
// path-style requests and HTTP/1.1 for a URL naming a server.
func openS3(ctx context.Context, loc location, c s3Credential, ts *transports) (*blob.Bucket, error) {
	// The SDK's own client type, which it needs to apply AWS_CA_BUNDLE;
	// it builds its transport at first use.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		// Triton pins HTTP/1.1 (core#216); Go's client would only use
		// HTTP/2 over TLS anyway.
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
		ts.track(tr)
	})
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithHTTPClient(httpClient)}
	switch {
	case c.KeyID != "" && c.Secret != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.KeyID, c.Secret, c.SessionToken)))
	case c.Profile != "":
		opts = append(opts, awsconfig.WithSharedConfigProfile(c.Profile))
	}
	if c.Region != "" {
		opts = append(opts, awsconfig.WithRegion(c.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = defaultS3Region
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if loc.endpoint != "" {
			o.BaseEndpoint = aws.String(loc.endpoint)
			o.UsePathStyle = true
			// S3-compatible servers differ in their support of the
			// newer flexible checksums; ask for them only when required.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return s3blob.OpenBucket(ctx, client, loc.bucket, nil)
}

// openGCS follows CORE gcs.h: a credential file (tried as an authorized
// user, then as a service account), else the default credentials, else
// anonymous access. The default credentials are Go's Application Default
// Credentials, which look at gcloud's well-known file as well as the
// metadata server Triton asks.
func openGCS(ctx context.Context, loc location, file string, transport *http.Transport) (*blob.Bucket, error) {
	var client *gcp.HTTPClient
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("Google credentials: %w", err)
		}
		creds, err := google.CredentialsFromJSONWithType(ctx, data, google.AuthorizedUser, gcsReadScope)
		if err != nil {
			creds, err = google.CredentialsFromJSONWithType(ctx, data, google.ServiceAccount, gcsReadScope)
		}
		if err != nil {
			return nil, fmt.Errorf("Google credentials %s: neither an authorized user nor a service account: %w", file, err)
		}
		if client, err = gcp.NewHTTPClient(transport, gcp.CredentialsTokenSource(creds)); err != nil {
			return nil, err
		}
	} else if creds, err := gcp.DefaultCredentials(ctx); err == nil {
		if client, err = gcp.NewHTTPClient(transport, gcp.CredentialsTokenSource(creds)); err != nil {
			return nil, err
		}
	} else {
		client = gcp.NewAnonymousHTTPClient(transport)
	}
	return gcsblob.OpenBucket(ctx, client, loc.bucket, nil)
}

// openAzure follows CORE as.h: the account from the credential overrides
// the URL's; "managed_identity" and "default" use token credentials, a
// key means shared-key authentication, nothing means anonymous access.
// The service is always https://<account>.blob.core.windows.net.
func openAzure(ctx context.Context, loc location, c azureCredential, transport *http.Transport, log *zap.Logger) (*blob.Bucket, error) {
	account := loc.account
	if c.Account != "" && c.Account != account {
		log.Info("the storage account of the credential overrides the one in the URL, as in Triton",
			zap.String("url", loc.display), zap.String("url_account", account), zap.String("account", c.Account))
		account = c.Account
	}
	containerURL := "https://" + account + azureDomain + "/" + loc.bucket
	opts := &container.ClientOptions{}
	opts.Transport = &http.Client{Transport: transport}
	var (
		client *container.Client
		err    error
	)
	switch c.AuthType {
	case azureAuthManagedIdentity:
		miOpts := &azidentity.ManagedIdentityCredentialOptions{}
		miOpts.Transport = opts.Transport
		if c.ClientID != "" {
			miOpts.ID = azidentity.ClientID(c.ClientID)
		}
		cred, cerr := azidentity.NewManagedIdentityCredential(miOpts)
		if cerr != nil {
			return nil, fmt.Errorf("Azure managed identity: %w", cerr)
		}
		client, err = container.NewClient(containerURL, cred, opts)
	case azureAuthDefault:
		dOpts := &azidentity.DefaultAzureCredentialOptions{}
		dOpts.Transport = opts.Transport
		cred, cerr := azidentity.NewDefaultAzureCredential(dOpts)
		if cerr != nil {
			return nil, fmt.Errorf("Azure default credential: %w", cerr)
		}
		client, err = container.NewClient(containerURL, cred, opts)
	case azureAuthKey, "":
		if c.Key == "" {
			client, err = container.NewClientWithNoCredential(containerURL, opts)
			break
		}
		cred, cerr := container.NewSharedKeyCredential(account, c.Key)
		if cerr != nil {
			// The SDK's message is about the key's encoding, not its value.
			return nil, fmt.Errorf("Azure shared key: %w", cerr)
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	default:
		return nil, fmt.Errorf("Azure authentication type %q is not one of %q, %q, %q",
			c.AuthType, azureAuthKey, azureAuthManagedIdentity, azureAuthDefault)
	}
	if err != nil {
		return nil, fmt.Errorf("Azure client: %w", err)
	}
	return azureblob.OpenBucket(ctx, client, nil)
}

// describe turns an error from the store into a message a person can act
// on, keeping the original reachable with errors.Is/As. what is the
// operation ("list", "read"); bucket names the bucket for a missing one.
func describe(err error, what, bucket string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var api smithy.APIError
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%s: bucket %q does not exist: %w", what, bucket, err)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" ||
		code == "ExpiredToken" || code == "InvalidToken" || code == "AuthorizationHeaderMalformed" ||
		gcerrors.Code(err) == gcerrors.PermissionDenied:
		return fmt.Errorf("%s: access denied, check the account credentials: %w", what, err)
	case gcerrors.Code(err) == gcerrors.NotFound && what == "list":
		return fmt.Errorf("%s: bucket %q not found: %w", what, bucket, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
