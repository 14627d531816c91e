package results

import (
	"encoding/json"
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
// so a crash or kill at any moment leaves the previous complete document.
func Save(dir string, r *Run) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".results-*.json")
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write results: %w", err)
	}
	if err := tmp.Chmod(FileMode); err != nil { // CreateTemp makes 0600
		tmp.Close()
		return fmt.Errorf("write results: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write results: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
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

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
