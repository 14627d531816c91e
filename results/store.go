package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	err = WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return &SaveError{Path: path, Err: unwrapPathErr(err)}
	}
	return nil
}

// WriteAtomic writes path whole or not at all: render fills a temp file
// beside it, which gets FileMode (CreateTemp makes 0600: results and
// reports share one mode) and an fsync before the rename publishes it, so
// a full disk or a crash leaves the previous file in place.
func WriteAtomic(path string, render func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = render(tmp)
	if err == nil {
		err = tmp.Chmod(FileMode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
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
	r.Dir = filepath.Dir(path)
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
