package cloudrepo

import (
	"strings"
	"testing"
)

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{
		"s3://bucket":      true,
		"gs://bucket/path": true,
		"as://acct/c":      true,
		"S3://bucket":      false, // Triton's prefixes are case-sensitive
		"/models":          false,
		"models":           false,
		"file:///models":   false,
		"http://host/x":    false,
		"s3:/bucket":       false,
		"":                 false,
	} {
		if got := IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestParseLocation(t *testing.T) {
	tests := []struct {
		name, url string
		want      location // raw and display are not compared
		wantErr   string   // substring; "" = no error
	}{
		{name: "s3 bucket only", url: "s3://bucket",
			want: location{scheme: "s3", bucket: "bucket"}},
		{name: "s3 bucket and path", url: "s3://bucket/a/b",
			want: location{scheme: "s3", bucket: "bucket", prefix: "a/b"}},
		{name: "s3 slashes cleaned", url: "s3:///bucket//a///b/",
			want: location{scheme: "s3", bucket: "bucket", prefix: "a/b"}},
		{name: "s3 upper-case bucket on AWS is taken as is", url: "s3://Bucket/x",
			want: location{scheme: "s3", bucket: "Bucket", prefix: "x"}},
		{name: "endpoint defaults to http", url: "s3://minio:9000/bucket/repo/models",
			want: location{scheme: "s3", endpoint: "http://minio:9000", bucket: "bucket", prefix: "repo/models"}},
		{name: "endpoint http", url: "s3://http://127.0.0.1:9000/bucket",
			want: location{scheme: "s3", endpoint: "http://127.0.0.1:9000", bucket: "bucket"}},
		{name: "endpoint https", url: "s3://https://s3.example.com:443/my.bucket-1/p_q/r.s-t/",
			want: location{scheme: "s3", endpoint: "https://s3.example.com:443", bucket: "my.bucket-1", prefix: "p_q/r.s-t"}},
		{name: "endpoint doubled slashes", url: "s3://https://host:443//bucket//p",
			want: location{scheme: "s3", endpoint: "https://host:443", bucket: "bucket", prefix: "p"}},
		// The traps: each misses Triton's expression, so Triton would take
		// the host as the bucket; we say why instead.
		{name: "upper-case bucket with endpoint", url: "s3://minio:9000/Bucket/repo",
			wantErr: `bucket "minio:9000" is not a bucket name`},
		{name: "semicolon as in the docs", url: "s3://minio;9000/bucket/repo",
			wantErr: `bucket "minio;9000" is not a bucket name: a URL naming an S3 server must match Triton's form s3://[http://|https://]host:port/bucket[/path] with the port given (separated by a colon, not the semicolon`},
		{name: "no port with scheme", url: "s3://https://minio/bucket",
			wantErr: `bucket "https:" is not a bucket name`},
		{name: "path segment outside the expression", url: "s3://minio:9000/bucket/my models",
			wantErr: "path segments of letters"},
		{name: "s3 empty", url: "s3://", wantErr: "no bucket name"},
		{name: "s3 only slashes", url: "s3:////", wantErr: "no bucket name"},
		{name: "userinfo is hidden", url: "s3://key:secret@minio:9000/bucket",
			wantErr: `bucket "REDACTED@minio:9000"`},

		{name: "gs", url: "gs://bucket/repo/x/",
			want: location{scheme: "gs", bucket: "bucket", prefix: "repo/x"}},
		{name: "gs bucket only", url: "gs://bucket",
			want: location{scheme: "gs", bucket: "bucket"}},
		{name: "gs no bucket", url: "gs:///repo", wantErr: "no bucket name"},

		{name: "as", url: "as://account/container/repo/models",
			want: location{scheme: "as", account: "account", bucket: "container", prefix: "repo/models"}},
		{name: "as container only", url: "as://account/container",
			want: location{scheme: "as", account: "account", bucket: "container"}},
		{name: "as host form", url: "as://acct.blob.core.windows.net/c/p",
			want: location{scheme: "as", account: "acct", bucket: "c", prefix: "p"}},
		{name: "as query ignored", url: "as://acct/c/p?sv=2020&sig=SECRETSIG",
			want: location{scheme: "as", account: "acct", bucket: "c", prefix: "p"}},
		{name: "as no container", url: "as://acct", wantErr: "want as://account/container"},
		{name: "as empty container", url: "as://acct/", wantErr: "want as://account/container"},

		{name: "local path", url: "/models", wantErr: "not an object-storage URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLocation(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseLocation(%q) error = %v, want one containing %q", tc.url, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "SECRETSIG") {
					t.Errorf("error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseLocation(%q): %v", tc.url, err)
			}
			if got.raw != tc.url {
				t.Errorf("raw = %q, want the URL as given", got.raw)
			}
			got.raw, got.display = "", ""
			if got != tc.want {
				t.Errorf("parseLocation(%q) = %+v, want %+v", tc.url, got, tc.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://bucket/p":                       "s3://bucket/p",
		"as://acct/c/p?sv=1&sig=abc":          "as://acct/c/p?REDACTED",
		"s3://user:pw@host:9000/b":            "s3://REDACTED@host:9000/b",
		"s3://https://user:pw@host:9000/b/p":  "s3://https://REDACTED@host:9000/b/p",
		"s3://https://host:9000/b/a@b":        "s3://https://host:9000/b/a@b",
		"gs://b":                              "gs://b",
		"s3://a@b":                            "s3://REDACTED@b",
		"s3://host:1/b?X-Amz-Signature=abcde": "s3://host:1/b?REDACTED",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestObjectURL(t *testing.T) {
	loc, err := parseLocation("as://acct/c/repo/?sig=x")
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.objectURL("m/1/model.onnx"); got != "as://acct/c/repo/m/1/model.onnx" {
		t.Errorf("objectURL = %q", got)
	}
	if got := loc.keyPrefix(); got != "repo/" {
		t.Errorf("keyPrefix = %q", got)
	}
	root, _ := parseLocation("s3://bucket")
	if root.keyPrefix() != "" || root.objectURL("") != "s3://bucket" {
		t.Errorf("bucket root: keyPrefix %q objectURL %q", root.keyPrefix(), root.objectURL(""))
	}
}
