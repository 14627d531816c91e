package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FileName is the results document inside a run directory.
const FileName = "results.json"

// FileMode is the mode of every file a run directory holds (results.json,
// summary.md and the reports): one mode, readable by all, because results
// are shared together with the reports made from them.
const FileMode os.FileMode = 0o644

// Save writes the run to dir/results.json atomically (temp file + rename),
// so a crash, a kill or a full disk at any moment leaves the previous
// complete document. A failure is a *SaveError naming results.json.
func Save(dir string, r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, FileName)
	tmp, err := os.CreateTemp(dir, ".results-*.json")
	if err != nil {
		return &SaveError{Path: path, Err: unwrapPathErr(err)}
	}
	defer os.Remove(tmp.Name())
	err = writeFile(tmp, append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return &SaveError{Path: path, Err: unwrapPathErr(err)}
	}
	return nil
}

// SaveError is a results document that could not be written: the disk is
// full, the directory became read-only or went away. The file at Path is
// still the last complete document.
type SaveError struct {
	Path string
	Err  error
}

func (e *SaveError) Error() string { return fmt.Sprintf("write %s: %v", e.Path, e.Err) }
func (e *SaveError) Unwrap() error { return e.Err }

// writeFile fills a fresh temp file: content, the run directory's mode
// (CreateTemp makes 0600), and fsync, so the rename publishes whole data.
func writeFile(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Chmod(FileMode); err != nil {
		return err
	}
	return f.Sync()
}

// Load reads dir/results.json (or a path to the file itself) and checks the
// schema version.
func Load(path string) (*Run, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, FileName)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a cnibench results document: %w", path, err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d, this cnibench reads %d", path, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// CheckWritable makes dir (and parents) and proves a file can be created in
// it, so a bad --out fails before any lab is built.
func CheckWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: cannot create directory: %v", dir, unwrapPathErr(err))
	}
	f, err := os.CreateTemp(dir, ".cnibench-write-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: directory is not writable: %v", dir, unwrapPathErr(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPathErr drops the temp file's name from an error: messages name
// the file the user knows.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}
