package cloudrepo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/triton-go/triton/cloudrepo"
	"github.com/triton-go/triton/repository"
)

// A server mirrors the bucket before each poll of the local folder. (This
// example needs an S3 server, so it is compiled but not run.)
func ExampleOpen() {
	ctx := context.Background()
	// Keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or from the
	// file named by TRITON_CLOUD_CREDENTIAL_PATH.
	r, err := cloudrepo.Open(ctx, "s3://minio:9000/models/triton", cloudrepo.Options{
		CacheDir: "/var/cache/triton-models", // kept across restarts
	})
	if err != nil {
		log.Fatal(err) // names the URL: a missing bucket, refused credentials, ...
	}
	defer r.Close()

	if err := r.Sync(ctx); err != nil {
		log.Print(err) // the models that failed keep their previous copy
	}
	models, err := repository.Scan([]repository.Root{repository.DirRoot(r.Dir())}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, md := range models {
		fmt.Println(md.Name, md.Versions)
	}
	fmt.Println(r.Stats().Downloads, "files downloaded")
}

func ExampleIsURL() {
	for _, repo := range []string{"s3://bucket/models", "gs://bucket/models", "as://account/container/models", "/models"} {
		fmt.Println(repo, cloudrepo.IsURL(repo))
	}
	// Output:
	// s3://bucket/models true
	// gs://bucket/models true
	// as://account/container/models true
	// /models false
}
