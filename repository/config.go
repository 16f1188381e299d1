package repository

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
)

// ConfigFile is the name of a model's configuration file inside its folder.
const ConfigFile = "config.pbtxt"

// ConfigError is a problem with a model configuration: a syntax error found
// by [ParseConfig] or a rule broken, found by [Validate].
//
// Path is the file (or, for a config that did not come from a file, any
// label the caller chose). Line and Col are 1-based and 0 when unknown:
// syntax errors have them, validation errors do not, because the parsed
// message no longer knows where a field was written. Field is the path of
// the offending field in the config, such as "input[1].dims" or
// "dynamic_batching.preferred_batch_size", and "" for syntax errors. Err
// is the reason.
type ConfigError struct {
	Path  string
	Line  int
	Col   int
	Field string
	Err   error
}

// Error formats the error as "path:line:col: field: reason", leaving out
// the parts that are empty or zero.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Col > 0 {
				fmt.Fprintf(&b, ":%d", e.Col)
			}
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid model configuration")
	}
	return b.String()
}

// Unwrap returns the reason.
func (e *ConfigError) Unwrap() error { return e.Err }

// ParseConfig parses data, the text of a config.pbtxt, into a ModelConfig.
//
// The syntax is protobuf text format as Triton's C++ parser reads it:
// "field: value" and "field { ... }" (the colon before a message is
// optional), repeated fields as repeated entries or as "[ a, b ]" lists,
// maps as repeated {key value} entries, enum values by name, bools as
// true/True/t/false/False/f/1/0, "#" comments, and optional "," or ";"
// after each field. Parsing is strict, as in Triton: an unknown field name,
// an unknown enum name, a scalar field given twice or two members of one
// oneof are errors. The result is not normalized or validated; see
// [Normalize] and [Validate].
//
// path is used only in errors. A syntax error is returned as a
// *ConfigError carrying the line and column where the parser stopped.
func ParseConfig(path string, data []byte) (*modelconfig.ModelConfig, error) {
	cfg := new(modelconfig.ModelConfig)
	if err := prototext.Unmarshal(data, cfg); err != nil {
		return nil, syntaxError(path, data, err)
	}
	return cfg, nil
}

// ReadConfig reads and parses the config.pbtxt of a model folder.
//
// When the folder has no config.pbtxt, ReadConfig returns an empty config
// whose Name is the folder name, found false and no error: Triton then
// relies on auto-completion ([GuessBackend] and the backend's own
// completion). When the file exists but does not name the model, Name is
// filled from the folder name, as Triton does; a name that differs from the
// folder is left for [Validate] to report. Read errors are wrapped with the
// file's path; syntax errors are *ConfigError.
func ReadConfig(md ModelDir) (cfg *modelconfig.ModelConfig, found bool, err error) {
	return ReadConfigFile(md, ConfigFile)
}

// ConfigsFolder is the folder of a model that holds its alternative
// configurations, chosen by name (tritonserver's --model-config-name).
const ConfigsFolder = "configs"

// ConfigFileFor returns the file, relative to the model folder, that holds
// md's configuration when the server is given a model config name
// (tritonserver's --model-config-name), with Triton's rule:
// configs/<name>.pbtxt when that file exists, config.pbtxt otherwise, and
// config.pbtxt for an empty name.
func ConfigFileFor(md ModelDir, name string) string {
	if name != "" && md.FS != nil {
		p := path.Join(ConfigsFolder, name+".pbtxt")
		if fi, err := md.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ConfigFile
}

// ReadConfigFile is [ReadConfig] for the configuration in file, a path
// relative to the model folder (see [ConfigFileFor]).
func ReadConfigFile(md ModelDir, file string) (cfg *modelconfig.ModelConfig, found bool, err error) {
	p := md.Path(file)
	if md.FS == nil {
		return nil, false, fmt.Errorf("repository: read %s: model folder has no file system", p)
	}
	// Only a regular file is read: a pipe would block the scan, a device
	// could read without end.
	fi, err := md.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &modelconfig.ModelConfig{Name: md.Name}, false, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("repository: read %s: %s, not a regular file", p, FileKind(fi.Mode()))
	}
	var data []byte
	if err == nil {
		data, err = fs.ReadFile(md.FS, file)
	}
	if err != nil {
		return nil, false, fmt.Errorf("repository: read %s: %w", p, err)
	}
	cfg, err = ParseConfig(p, data)
	if err != nil {
		return nil, true, err
	}
	if cfg.GetName() == "" {
		cfg.Name = md.Name
	}
	return cfg, true, nil
}

// FileKind says what a file that is not a regular one is, for messages:
// "a folder", "a named pipe", "a socket", "a device", or its mode.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a file of mode " + m.String()
}

// linePos matches the position prototext writes into its messages.
var linePos = regexp.MustCompile(`\(line (\d+):(\d+)\):?`)

// syntaxError turns a prototext error into a *ConfigError with the line and
// column pulled out of its text. prototext deliberately varies the spacing
// of its "proto:" prefix between builds, so only the position and the text
// after it are relied upon.
func syntaxError(path string, data []byte, err error) *ConfigError {
	msg := err.Error()
	ce := &ConfigError{Path: path}
	syntax := strings.Contains(msg, "syntax error")
	if loc := linePos.FindStringSubmatchIndex(msg); loc != nil {
		ce.Line, _ = strconv.Atoi(msg[loc[2]:loc[3]])
		ce.Col, _ = strconv.Atoi(msg[loc[4]:loc[5]])
		msg = msg[loc[1]:]
	} else {
		msg = trimProtoPrefix(msg)
		if strings.Contains(msg, "unexpected EOF") {
			// prototext gives no position for a truncated file; point at
			// its end, where the missing text belongs.
			ce.Line, ce.Col = endPos(data)
		}
	}
	msg = strings.TrimFunc(msg, isSpace)
	if syntax && !strings.HasPrefix(msg, "syntax error") {
		msg = "syntax error: " + msg
	}
	ce.Err = errors.New(msg)
	return ce
}

func trimProtoPrefix(msg string) string {
	msg = strings.TrimPrefix(msg, "proto:")
	return strings.TrimLeftFunc(msg, isSpace)
}

func isSpace(r rune) bool { return r == ' ' || r == '\u00a0' || r == '\t' || r == '\n' }

// endPos returns the 1-based line and column just past the end of data.
func endPos(data []byte) (line, col int) {
	line = 1 + bytes.Count(data, []byte("\n"))
	last := data[bytes.LastIndexByte(data, '\n')+1:]
	return line, len(last) + 1
}
