package cloudrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func mustParse(t *testing.T, u string) location {
	t.Helper()
	loc, err := parseLocation(u)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestCredentialFromEnv(t *testing.T) {
	vars := map[string]string{
		"AWS_ACCESS_KEY_ID":              "AKID",
		"AWS_SECRET_ACCESS_KEY":          "SECRET",
		"AWS_SESSION_TOKEN":              "TOKEN",
		"AWS_DEFAULT_REGION":             "eu-west-1",
		"AWS_PROFILE":                    "prof",
		"GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
		"AZURE_STORAGE_ACCOUNT":          "envacct",
		"AZURE_STORAGE_KEY":              "AZKEY",
		"AZURE_STORAGE_CLIENT_ID":        "cid",
	}
	tests := []struct {
		name string
		url  string
		vars map[string]string
		want credential // source and secrets compared separately
	}{
		{name: "s3", url: "s3://b/p", vars: vars,
			want: credential{s3: s3Credential{KeyID: "AKID", Secret: "SECRET", SessionToken: "TOKEN", Region: "eu-west-1", Profile: "prof"}}},
		{name: "s3 endpoint", url: "s3://minio:9000/b", vars: map[string]string{"AWS_PROFILE": "p"},
			want: credential{s3: s3Credential{Profile: "p"}}},
		{name: "gs", url: "gs://b", vars: vars, want: credential{gcsFile: "/creds.json"}},
		{name: "as key implies key auth", url: "as://urlacct/c", vars: vars,
			want: credential{azure: azureCredential{Account: "envacct", Key: "AZKEY", AuthType: "key", ClientID: "cid"}}},
		{name: "as managed identity", url: "as://a/c",
			vars: map[string]string{"AZURE_STORAGE_AUTH_TYPE": "managed_identity", "AZURE_STORAGE_CLIENT_ID": "cid"},
			want: credential{azure: azureCredential{AuthType: "managed_identity", ClientID: "cid"}}},
		{name: "as anonymous", url: "as://a/c", vars: nil, want: credential{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookupCredential(mustParse(t, tc.url), env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			if got.source != "environment" {
				t.Errorf("source = %q", got.source)
			}
			got.source, got.secrets = "", nil
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// credFile is a TRITON_CLOUD_CREDENTIAL_PATH file in the shape of the
// Triton docs' example (model_repository.md).
const credFile = `{
  "gs": {
    "": "PATH_TO_GOOGLE_APPLICATION_CREDENTIALS",
    "gs://gcs-bucket-002": "PATH_TO_GOOGLE_APPLICATION_CREDENTIALS_2"
  },
  "s3": {
    "": {"secret_key": "FALLBACK_SECRET", "key_id": "FALLBACK_ID", "region": "us-east-1", "session_token": "", "profile": ""},
    "s3://s3-bucket-002": {"secret_key": "SECRET_2", "key_id": "ID_2", "region": "eu-west-1", "session_token": "TOKEN_2", "profile": ""},
    "s3://s3-bucket-002/deeper": {"key_id": "ID_3", "secret_key": "SECRET_3"},
    "s3://https://minio:9000/bucket": {"key_id": "MINIO_ID", "secret_key": "MINIO_SECRET"}
  },
  "as": {
    "as://acct/container-2": {"account_str": "other", "account_key": "AS_KEY_2", "auth_type": "key"}
  }
}`

func TestCredentialFromFile(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		want    credential // source and secrets compared separately
		source  string     // the entry's name
		wantErr string
	}{
		{name: "s3 fallback", url: "s3://s3-bucket-001/repo", source: "",
			want: credential{s3: s3Credential{KeyID: "FALLBACK_ID", Secret: "FALLBACK_SECRET", Region: "us-east-1"}}},
		{name: "s3 bucket entry", url: "s3://s3-bucket-002/model_repository", source: "s3://s3-bucket-002",
			want: credential{s3: s3Credential{KeyID: "ID_2", Secret: "SECRET_2", Region: "eu-west-1", SessionToken: "TOKEN_2"}}},
		{name: "s3 longest prefix wins", url: "s3://s3-bucket-002/deeper/repo", source: "s3://s3-bucket-002/deeper",
			want: credential{s3: s3Credential{KeyID: "ID_3", Secret: "SECRET_3"}}},
		{name: "s3 prefix is plain text, not a path", url: "s3://s3-bucket-0020/x", source: "s3://s3-bucket-002",
			want: credential{s3: s3Credential{KeyID: "ID_2", Secret: "SECRET_2", Region: "eu-west-1", SessionToken: "TOKEN_2"}}},
		{name: "endpoint entry matches the literal URL", url: "s3://https://minio:9000/bucket/repo", source: "s3://https://minio:9000/bucket",
			want: credential{s3: s3Credential{KeyID: "MINIO_ID", Secret: "MINIO_SECRET"}}},
		{name: "same server written without https falls back", url: "s3://minio:9000/bucket/repo", source: "",
			want: credential{s3: s3Credential{KeyID: "FALLBACK_ID", Secret: "FALLBACK_SECRET", Region: "us-east-1"}}},
		{name: "gs entry", url: "gs://gcs-bucket-002/model_repository", source: "gs://gcs-bucket-002",
			want: credential{gcsFile: "PATH_TO_GOOGLE_APPLICATION_CREDENTIALS_2"}},
		{name: "gs fallback", url: "gs://gcs-bucket-001/r", source: "",
			want: credential{gcsFile: "PATH_TO_GOOGLE_APPLICATION_CREDENTIALS"}},
		{name: "as entry", url: "as://acct/container-2/r", source: "as://acct/container-2",
			want: credential{azure: azureCredential{Account: "other", Key: "AS_KEY_2", AuthType: "key"}}},
		{name: "as without fallback: Triton's error", url: "as://acct/container-1/r",
			wantErr: "Cannot match credential for path  as://acct/container-1/r"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := credentialFromFile(mustParse(t, tc.url), "creds.json", []byte(credFile))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("creds.json entry %q", tc.source); got.source != want {
				t.Errorf("source = %s, want %s", got.source, want)
			}
			got.source, got.secrets = "", nil
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCredentialFileErrors(t *testing.T) {
	tests := []struct {
		name, url, file, wantErr string
	}{
		{name: "provider missing from the file", url: "gs://b/r", file: `{"s3": {"": {}}}`,
			wantErr: "Cannot match credential for path  gs://b/r"},
		{name: "unknown field", url: "s3://b/r", file: `{"s3": {"": {"secretkey": "TOPSECRET"}}}`,
			wantErr: `unknown field "secretkey"`},
		{name: "wrong type", url: "s3://b/r", file: `{"s3": {"": {"key_id": 7}}}`,
			wantErr: "cannot unmarshal number"},
		{name: "not JSON", url: "s3://b/r", file: `{"s3": `, wantErr: "unexpected end of JSON"},
		{name: "gs entry not a string", url: "gs://b", file: `{"gs": {"": {"path": "x"}}}`,
			wantErr: "cannot unmarshal object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credentialFromFile(mustParse(t, tc.url), "creds.json", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "creds.json") {
				t.Errorf("error does not name the file: %v", err)
			}
			if strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("error shows a value: %v", err)
			}
		})
	}
}

// TestCredentialFileOverridesEnv: with the file set, the provider's
// variables are not read, even where the file has no usable entry.
func TestCredentialFileOverridesEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "creds.json")
	if err := os.WriteFile(file, []byte(`{"s3": {"s3://other": {"key_id": "F", "secret_key": "S"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		CredentialPathEnv:       file,
		"AWS_ACCESS_KEY_ID":     "ENVID",
		"AWS_SECRET_ACCESS_KEY": "ENVSECRET",
	}
	_, err := lookupCredential(mustParse(t, "s3://bucket/r"), env(vars))
	if err == nil || !strings.Contains(err.Error(), "Cannot match credential for path  s3://bucket/r") {
		t.Fatalf("error = %v, want Triton's no-match error", err)
	}
	got, err := lookupCredential(mustParse(t, "s3://other/r"), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if got.s3.KeyID != "F" || got.s3.Secret != "S" {
		t.Errorf("got %+v, want the file's keys", got.s3)
	}

	vars[CredentialPathEnv] = filepath.Join(t.TempDir(), "missing.json")
	if _, err := lookupCredential(mustParse(t, "s3://bucket/r"), env(vars)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestScrub(t *testing.T) {
	c := credentialFromEnv(mustParse(t, "s3://b"), env(map[string]string{
		"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "S3CR3T", "AWS_SESSION_TOKEN": "T0K3N",
	}))
	cause := fs.ErrPermission
	err := c.scrub(fmt.Errorf("signed with S3CR3T and T0K3N: %w", cause))
	if strings.Contains(err.Error(), "S3CR3T") || strings.Contains(err.Error(), "T0K3N") {
		t.Errorf("scrubbed message still has a secret: %v", err)
	}
	if !strings.Contains(err.Error(), "signed with REDACTED and REDACTED") {
		t.Errorf("message = %v", err)
	}
	if !errors.Is(err, cause) {
		t.Error("scrub hides the cause from errors.Is")
	}
	plain := errors.New("nothing secret")
	if c.scrub(plain) != plain || c.scrub(nil) != nil {
		t.Error("scrub changed an error without secrets")
	}
}
