// Package cloudrepo mirrors a Triton model repository kept in object
// storage (Amazon S3 and S3-compatible servers, Google Cloud Storage,
// Azure Blob Storage) into a local folder, so that the server, which reads
// local folders, can load it. It accepts the URLs and credentials Triton
// accepts, so a deployment that points Triton at s3://, gs:// or as://
// works unchanged.
//
// # Entry points
//
// [IsURL] tells a repository URL from a local path. [Open] connects and
// checks the bucket; [Repository.Sync] brings models up to date in
// [Repository.Dir], which the server scans like any repository;
// [Repository.Models] lists what the last listing found; [Repository.Close]
// disconnects. A poller calls Sync before each poll of Dir; explicit model
// control calls Sync(ctx, name) before a load.
//
//	r, err := cloudrepo.Open(ctx, "s3://minio:9000/models/triton", cloudrepo.Options{Logger: log})
//	if err != nil {
//		return err
//	}
//	defer r.Close()
//	if err := r.Sync(ctx); err != nil {
//		return err // models that failed keep their previous copy
//	}
//	models, err := repository.Scan([]repository.Root{repository.DirRoot(r.Dir())}, log)
//
// # URLs
//
// As in Triton (core src/filesystem):
//
//   - s3://bucket/path: AWS, virtual-hosted requests, region from the
//     credentials, else us-east-1.
//   - s3://host:port/bucket/path, s3://http://host:port/bucket/path,
//     s3://https://host:port/bucket/path: an S3-compatible server, HTTP
//     unless https:// is written, path-style requests. Triton's expression
//     applies: the port is mandatory (after a colon; the Triton docs'
//     "semicolon" is a typo), the bucket lower-case, path segments
//     [0-9a-zA-Z._-]; a URL that misses it would be read with the host as
//     the bucket, which Open reports as an error explaining the form.
//   - gs://bucket/path.
//   - as://account/container/path, the account also written as
//     account.blob.core.windows.net; the service is always
//     https://<account>.blob.core.windows.net. A query is ignored (and
//     hidden in messages).
//
// Leading, trailing and doubled slashes in the path are dropped.
//
// # Credentials
//
// When TRITON_CLOUD_CREDENTIAL_PATH ([CredentialPathEnv]) names a JSON
// file, credentials come from it alone: its "s3", "gs" and "as" maps key
// credentials by a URL prefix ("" matches every URL); the longest name
// that is a prefix of the URL as given wins; no match is Triton's error
// "Cannot match credential for path  <url>" (two spaces). S3 entries hold
// key_id, secret_key, session_token, region, profile; gs entries are the
// path of a Google credential file; as entries hold account_str,
// account_key, auth_type, client_id. Unlike Triton, unknown fields in an
// entry are an error (a misspelt secret_key would mean connecting without
// keys). The file is read at each Open, not cached for the process.
//
// Otherwise each provider's variables are read, as Triton reads them:
//
//   - S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (both, with
//     AWS_SESSION_TOKEN if set) and AWS_DEFAULT_REGION; else AWS_PROFILE;
//     else the AWS SDK's default chain (shared files, web identity,
//     container and instance roles). The SDK's chain may itself read the
//     AWS_* variables even when the credential file is in use, as the AWS
//     C++ SDK does in Triton.
//   - GCS: GOOGLE_APPLICATION_CREDENTIALS (an authorized-user or
//     service-account file); else the Application Default Credentials
//     (gcloud's file, the metadata server); else anonymous access.
//   - Azure: AZURE_STORAGE_ACCOUNT (which overrides the URL's account, as
//     in Triton; logged), AZURE_STORAGE_KEY, AZURE_STORAGE_AUTH_TYPE (key,
//     implied by a key; managed_identity, with AZURE_STORAGE_CLIENT_ID for
//     a user-assigned identity; default, the DefaultAzureCredential chain);
//     no key and no type is anonymous access. An unknown type is an error.
//
// Secrets never appear in errors or logs: messages name the URL, with a
// query string or user information replaced.
//
// # The local copy
//
// Triton downloads a model folder into a fresh temporary folder at each
// load and caches nothing. This package keeps one copy per model and
// updates it in place, atomically:
//
//	<Dir>/<model>                      link to .snapshots/<model>/<n>
//	<Dir>/.snapshots/<model>/<n>/      snapshot n: the model folder's files
//	<Dir>/.snapshots/<model>/<n>.json  the listing snapshot n was built from
//
// Sync lists the whole repository folder once (the listing carries each
// object's size, modification time and MD5; there is no request per
// object) and compares each model's objects with the manifest of its
// current snapshot. Equal means nothing happens. Otherwise a new snapshot
// is built beside the current one: unchanged files are hard-linked from it
// (copied where links fail), the rest downloaded and checked (byte count
// against the listed size, MD5 against the listed one where the store
// reports one), every file's modification time set to its object's, so
// that the server's poller, which fingerprints sizes, times and small
// contents, sees an unchanged file as unchanged. Then the model's link is
// replaced with rename(2): readers see the old version or the new one,
// never a partial download, and a reload of an unchanged version
// downloads nothing. The replaced snapshot is kept until the model's next
// swap (a server still reading it is not cut short), then deleted. A
// model that leaves the bucket loses its link; the poller then unloads it.
// A reader that must see one version throughout a multi-file read should
// resolve the link once (filepath.EvalSymlinks) and read below the result.
//
// Keys ending in "/" are folders. A key with an empty, "." or ".." path
// segment (it would escape the model folder or be absolute) is refused and
// fails its model's sync with an error naming the key; so does a path
// that is both a file and a folder. Names beginning with a dot are not
// models. Files beside the models are ignored, as by Triton.
//
// Open holds an flock on <Dir>/.lock until Close. A folder Open makes
// under the mount folder is removed by Close; one left by a process that
// died before its Close (an OOM kill in a restarting container) is removed
// by the next Open under the same mount folder, since no one holds its
// lock, so restarts do not pile copies up in the volume. A folder given as
// [Options.CacheDir] that another open Repository holds is refused.
//
// A folder given as [Options.CacheDir] survives Close and is reused by the
// next Open: leftovers of a crash (partial snapshots, temporary links) are
// removed, and current snapshots whose files still match their manifest
// are kept, so a restart downloads only what changed. Nothing is synced to
// disk with fsync: after a power loss, a snapshot that does not match its
// manifest is rebuilt.
//
// # Concurrency
//
// A Repository is safe for concurrent use. Each Sync handles up to four
// models at a time and downloads up to four files of a model at a time;
// Syncs of the same model are serialised by a per-model lock, and a Sync
// holding an older listing than the one a model was last synced from
// leaves it alone. Cancelling a Sync's context, or Close, stops its
// downloads and leaves the previous copies in place.
//
// # Library
//
// Storage access goes through the Go CDK (gocloud.dev/blob, with s3blob on
// aws-sdk-go-v2, gcsblob and azureblob): one API over the three providers,
// listing with prefixes and delimiters, ranged readers, and list
// attributes that carry the size, time and MD5 (from the ETag on S3) the
// mirror compares; it is maintained by Google and used widely. The
// clients underneath are built here, to apply Triton's credential rules.
//
// # Testing
//
// S3 is tested end to end against a real S3 server (versitygw, started by
// internal/s3test), including connection cuts mid-download. gs:// and
// as:// are covered by URL-parsing and credential unit tests only: there
// is no emulator in the test set-up.
package cloudrepo
