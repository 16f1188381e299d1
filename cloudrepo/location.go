package cloudrepo

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// URL schemes, exactly as Triton spells them (case-sensitive prefixes).
const (
	schemeS3    = "s3"
	schemeGCS   = "gs"
	schemeAzure = "as"
)

// IsURL reports whether s names a repository in object storage: it starts
// with s3://, gs:// or as://, the prefixes Triton routes to its cloud file
// systems. Anything else is a local path to Triton, and to this package.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "gs://") || strings.HasPrefix(s, "as://")
}

// location is a parsed repository URL.
type location struct {
	// raw is the URL as given; credential names are matched against it.
	raw string
	// display is raw with anything that may be secret (a query string,
	// user information) replaced; it is the only form used in messages.
	display string
	scheme  string
	// bucket is the S3 or GCS bucket, or the Azure container.
	bucket string
	// prefix is the repository folder's object path: no leading, trailing
	// or doubled slashes; "" is the bucket's root.
	prefix string
	// endpoint is, for S3 only, the base URL of an S3-compatible server
	// (http://host:port or https://host:port); "" means AWS.
	endpoint string
	// account is, for Azure only, the storage account named in the URL.
	account string
}

// s3Endpoint is Triton's regular expression for S3 URLs naming a server
// (CORE s3.h): the port is mandatory, the bucket lower-case, and the object
// path's segments limited to [0-9a-zA-Z._-]. A URL that does not match is
// read as s3://bucket/path, which takes the host as the bucket.
var s3Endpoint = regexp.MustCompile(`^s3://(http://|https://|)([0-9a-zA-Z\-.]+):([0-9]+)/([0-9a-z.\-]+)(((/[0-9a-zA-Z.\-_]+)*)?)$`)

// azurePath is Triton's regular expression for Azure URLs (CORE as.h):
// as://account/container/path, with an optional query that is ignored.
var azurePath = regexp.MustCompile(`^as://([^/]+)/([^/?]+)(?:/([^?]*))?(\?.*)?$`)

// azureDomain is the host suffix Triton strips from an Azure account
// written as a host name.
const azureDomain = ".blob.core.windows.net"

// parseLocation parses a repository URL the way Triton does. Errors name
// the URL in its display form.
func parseLocation(raw string) (location, error) {
	loc := location{raw: raw, display: redactURL(raw)}
	var err error
	switch {
	case strings.HasPrefix(raw, "s3://"):
		loc.scheme = schemeS3
		err = loc.parseS3()
	case strings.HasPrefix(raw, "gs://"):
		loc.scheme = schemeGCS
		err = loc.parseGCS()
	case strings.HasPrefix(raw, "as://"):
		loc.scheme = schemeAzure
		err = loc.parseAzure()
	default:
		err = errors.New("not an object-storage URL (want s3://, gs:// or as://)")
	}
	if err != nil {
		return location{}, fmt.Errorf("cloudrepo: %s: %w", loc.display, err)
	}
	return loc, nil
}

// parseS3 follows CORE s3.h: CleanPath, then the endpoint expression, else
// the bucket is the text up to the first slash. Two deliberate
// differences: http:// or https:// is recognised only right after s3://
// (Triton finds it anywhere in the path), and a bucket with a colon in it,
// which is what a URL that was meant to name a server but failed the
// expression turns into, is an error explaining the expression instead of
// a request for a bucket called "host:port" (and so is a semicolon, which
// the Triton docs show between host and port).
func (l *location) parseS3() error {
	rest := strings.TrimPrefix(l.raw, "s3://")
	scheme := ""
	for _, s := range []string{"https://", "http://"} {
		if strings.HasPrefix(rest, s) {
			scheme, rest = s, strings.TrimPrefix(rest, s)
			break
		}
	}
	rest = cleanSlashes(rest)
	if rest == "" {
		return errors.New("no bucket name in the URL")
	}
	clean := "s3://" + scheme + rest
	if m := s3Endpoint.FindStringSubmatch(clean); m != nil {
		proto := "http://" // the host:port form defaults to HTTP, as in Triton
		if m[1] == "https://" {
			proto = "https://"
		}
		l.endpoint = proto + m[2] + ":" + m[3]
		l.bucket = m[4]
		l.prefix = strings.TrimPrefix(m[5], "/")
		return nil
	}
	// Not the endpoint form. With a scheme, Triton's fallback takes
	// "http:" or "https:" as the bucket.
	if scheme != "" {
		rest = scheme + rest
	}
	l.bucket, l.prefix, _ = strings.Cut(rest, "/")
	if strings.ContainsAny(l.bucket, ":;") {
		return fmt.Errorf("bucket %q is not a bucket name: a URL naming an S3 server must match Triton's form "+
			"s3://[http://|https://]host:port/bucket[/path] with the port given (separated by a colon, "+
			"not the semicolon the Triton docs show), a lower-case bucket and path segments of "+
			"letters, digits, '.', '-' and '_'; otherwise the host is taken as the bucket", hideUserinfo(l.bucket))
	}
	return nil
}

// parseGCS follows CORE gcs.h: the bucket is the text up to the first
// slash, the object path the rest.
func (l *location) parseGCS() error {
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(l.raw, "gs://"), "/")
	if bucket == "" {
		return errors.New("no bucket name in the URL")
	}
	l.bucket, l.prefix = bucket, cleanSlashes(prefix)
	return nil
}

// parseAzure follows CORE as.h: as://account/container[/path][?query],
// where the account may be written as <account>.blob.core.windows.net.
func (l *location) parseAzure() error {
	m := azurePath.FindStringSubmatch(l.raw)
	if m == nil {
		return errors.New("not an Azure storage URL: want as://account/container[/path]")
	}
	l.account = m[1]
	if i := strings.LastIndex(l.account, azureDomain); i >= 0 {
		l.account = l.account[:i]
	}
	l.bucket = m[2]
	l.prefix = cleanSlashes(m[3])
	return nil
}

// cleanSlashes drops leading and trailing slashes and collapses doubled
// ones, as Triton's CleanPath does.
func cleanSlashes(p string) string {
	var b strings.Builder
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// redactURL returns u with what might be secret hidden: a query string
// (an Azure SAS token) and user information before an '@' in a host part.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i] + "?REDACTED"
	}
	// Each "://" starts an authority that runs to the next slash.
	var b strings.Builder
	for {
		i := strings.Index(u, "://")
		if i < 0 {
			b.WriteString(u)
			return b.String()
		}
		b.WriteString(u[:i+3])
		u = u[i+3:]
		end := strings.IndexByte(u, '/')
		if end < 0 {
			end = len(u)
		}
		if j := strings.Index(u, "://"); j >= 0 && j < end {
			continue // s3://https://...: the authority follows the next scheme
		}
		b.WriteString(hideUserinfo(u[:end]))
		u = u[end:]
	}
}

// hideUserinfo replaces what comes before the last '@' of a URL's host
// part (user:password@host).
func hideUserinfo(host string) string {
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		return "REDACTED" + host[at:]
	}
	return host
}

// objectURL returns the display URL of the object or folder at rel below
// the repository folder.
func (l *location) objectURL(rel string) string {
	base := l.display
	if q := strings.IndexByte(base, '?'); q >= 0 {
		base = base[:q]
	}
	base = strings.TrimRight(base, "/")
	if rel == "" {
		return base
	}
	return base + "/" + rel
}

// keyPrefix returns the key prefix under which the repository's objects
// live: "" for a bucket root, else the prefix and a slash.
func (l *location) keyPrefix() string {
	if l.prefix == "" {
		return ""
	}
	return l.prefix + "/"
}
