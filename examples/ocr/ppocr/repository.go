package ppocr

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// configs is the committed model repository: config.pbtxt files only.
//
//go:embed model_repository
var configs embed.FS

// Files of the PP-OCR models (fetched by scripts/fetch-models.sh into
// .cache/models/ppocr), by the model that serves them.
var modelFiles = map[string]string{
	DetModel: "ch_PP-OCRv4_det_infer.onnx",
	ClsModel: "ch_ppocr_mobile_v2.0_cls_infer.onnx",
	RecModel: "ch_PP-OCRv4_rec_infer.onnx",
}

// keysUsers are the models that read the dictionary from their version
// folder.
var keysUsers = []string{"ppocr_decode", "ppocr_bls"}

// Configs returns the pipeline's model repository as committed: one folder
// per model holding its config.pbtxt, no model files.
func Configs() fs.FS {
	sub, err := fs.Sub(configs, "model_repository")
	if err != nil {
		panic(err) // the embedded folder exists
	}
	return sub
}

// WriteRepository writes a servable model repository into dst (created if
// needed): the configurations of [Configs], a version folder 1 for every
// model, symbolic links <model>/1/model.onnx to the three ONNX files in
// modelsDir, and a copy of modelsDir's ppocr_keys_v1.txt in the version
// folders of ppocr_decode and ppocr_bls. Its models are served by the
// onnxruntime backend and the Go backends of [Backends].
func WriteRepository(dst, modelsDir string) error {
	src, err := filepath.Abs(modelsDir)
	if err != nil {
		return err
	}
	for _, f := range append([]string{KeysFile}, modelFiles[DetModel], modelFiles[ClsModel], modelFiles[RecModel]) {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			return fmt.Errorf("PP-OCR model files: %w (scripts/fetch-models.sh fetches them into .cache/models/ppocr)", err)
		}
	}
	cfgs := Configs()
	err = fs.WalkDir(cfgs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			if path.Dir(p) == "." && p != "." { // a model folder
				to = filepath.Join(to, "1")
			}
			return os.MkdirAll(to, 0o755)
		}
		b, err := fs.ReadFile(cfgs, p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		return err
	}
	for model, file := range modelFiles {
		link := filepath.Join(dst, model, "1", "model.onnx")
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.Symlink(filepath.Join(src, file), link); err != nil {
			return err
		}
	}
	keys, err := os.ReadFile(filepath.Join(src, KeysFile))
	if err != nil {
		return err
	}
	for _, model := range keysUsers {
		if err := os.WriteFile(filepath.Join(dst, model, "1", KeysFile), keys, 0o644); err != nil {
			return err
		}
	}
	return nil
}
