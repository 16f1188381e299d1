package cloudrepo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// CredentialPathEnv names the environment variable that, as in Triton,
// points at a JSON file of credentials keyed by URL prefix. When it is set,
// the provider's credential variables (AWS_ACCESS_KEY_ID, ...) are not
// read by this package.
const CredentialPathEnv = "TRITON_CLOUD_CREDENTIAL_PATH"

// s3Credential is one S3 credential: from the AWS_* variables or one entry
// of the file's "s3" map.
type s3Credential struct {
	KeyID        string `json:"key_id"`
	Secret       string `json:"secret_key"`
	Region       string `json:"region"`
	SessionToken string `json:"session_token"`
	Profile      string `json:"profile"`
}

// azureCredential is one Azure credential: from the AZURE_STORAGE_*
// variables or one entry of the file's "as" map.
type azureCredential struct {
	Account  string `json:"account_str"`
	Key      string `json:"account_key"`
	AuthType string `json:"auth_type"`
	ClientID string `json:"client_id"`
}

// Azure authentication types (AZURE_STORAGE_AUTH_TYPE, "auth_type").
const (
	azureAuthKey             = "key"
	azureAuthManagedIdentity = "managed_identity"
	azureAuthDefault         = "default"
)

// credential is what Open connects with: one of the three is set, for the
// URL's scheme.
type credential struct {
	// source says where it came from, for logs: "environment" or
	// `file.json entry "s3://bucket"`.
	source string
	s3     s3Credential
	// gcsFile is the path of a Google credential JSON file; "" means the
	// default credentials, else anonymous access.
	gcsFile string
	azure   azureCredential
	// secrets are the values that must never appear in a message.
	secrets []string
}

// lookupCredential finds the credential for loc, reading the variables
// through getenv: from the file named by TRITON_CLOUD_CREDENTIAL_PATH when
// it is set, else from the provider's variables.
func lookupCredential(loc location, getenv func(string) string) (credential, error) {
	if file := getenv(CredentialPathEnv); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return credential{}, fmt.Errorf("read %s: %w", CredentialPathEnv, err)
		}
		return credentialFromFile(loc, file, data)
	}
	return credentialFromEnv(loc, getenv), nil
}

// credentialFromEnv reads the variables Triton reads for loc's provider.
func credentialFromEnv(loc location, getenv func(string) string) credential {
	c := credential{source: "environment"}
	switch loc.scheme {
	case schemeS3:
		c.s3 = s3Credential{
			KeyID:        getenv("AWS_ACCESS_KEY_ID"),
			Secret:       getenv("AWS_SECRET_ACCESS_KEY"),
			Region:       getenv("AWS_DEFAULT_REGION"),
			SessionToken: getenv("AWS_SESSION_TOKEN"),
			Profile:      getenv("AWS_PROFILE"),
		}
	case schemeGCS:
		c.gcsFile = getenv("GOOGLE_APPLICATION_CREDENTIALS")
	case schemeAzure:
		c.azure = azureCredential{
			Account:  getenv("AZURE_STORAGE_ACCOUNT"),
			Key:      getenv("AZURE_STORAGE_KEY"),
			AuthType: getenv("AZURE_STORAGE_AUTH_TYPE"),
			ClientID: getenv("AZURE_STORAGE_CLIENT_ID"),
		}
		// Triton: a key with no type means key authentication.
		if c.azure.AuthType == "" && c.azure.Key != "" {
			c.azure.AuthType = azureAuthKey
		}
	}
	c.collectSecrets()
	return c
}

// credentialFromFile picks loc's credential from the contents of a
// TRITON_CLOUD_CREDENTIAL_PATH file (named file in messages): the entry of
// the scheme's map whose name is the longest prefix of the URL as given,
// "" matching every URL. A scheme missing from the file has no entries,
// so nothing matches (Triton's behaviour).
func credentialFromFile(loc location, file string, data []byte) (credential, error) {
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return credential{}, fmt.Errorf("%s %s: %w", CredentialPathEnv, file, err)
	}
	entries := doc[loc.scheme]
	name, ok := longestPrefix(loc.raw, entries)
	if !ok {
		// Triton's text, two spaces included.
		return credential{}, fmt.Errorf("%s %s: Cannot match credential for path  %s", CredentialPathEnv, file, loc.display)
	}
	c := credential{source: fmt.Sprintf("%s entry %q", file, redactURL(name))}
	raw := entries[name]
	var err error
	switch loc.scheme {
	case schemeS3:
		err = decodeStrict(raw, &c.s3)
	case schemeGCS:
		err = json.Unmarshal(raw, &c.gcsFile)
	case schemeAzure:
		err = decodeStrict(raw, &c.azure)
	}
	if err != nil {
		// encoding/json messages name fields and types, never values.
		return credential{}, fmt.Errorf("%s %s: %q entry %q: %w", CredentialPathEnv, file, loc.scheme, redactURL(name), err)
	}
	c.collectSecrets()
	return c, nil
}

// longestPrefix returns the longest name in entries that is a prefix of
// u; equal lengths cannot both be prefixes unless equal.
func longestPrefix(u string, entries map[string]json.RawMessage) (string, bool) {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, name := range names {
		if strings.HasPrefix(u, name) {
			return name, true
		}
	}
	return "", false
}

// decodeStrict decodes one credential entry, rejecting unknown fields: a
// misspelt "secret_key" would otherwise mean silently connecting without
// keys. (Triton ignores unknown fields.)
func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the entry")
	}
	return nil
}

// collectSecrets records the values messages must never contain.
func (c *credential) collectSecrets() {
	for _, s := range []string{c.s3.Secret, c.s3.SessionToken, c.azure.Key} {
		if s != "" {
			c.secrets = append(c.secrets, s)
		}
	}
}

// scrub returns err with every secret of c replaced in its message; the
// original error stays reachable through errors.Unwrap, errors.Is and
// errors.As.
func (c *credential) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range c.secrets {
		clean = strings.ReplaceAll(clean, s, "REDACTED")
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbedError is an error whose message had secrets removed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
