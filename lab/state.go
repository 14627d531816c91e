package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// save writes state.json atomically (temporary file, sync, rename), so
// Load never sees half a file.
func (l *Lab) save() error {
	dir := filepath.Join(l.Config.StateDir, l.Config.Name)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFile+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// Load reads <stateDir>/<name>/state.json. A missing file wraps ErrNotFound.
func Load(stateDir, name string) (*Lab, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(stateDir, name, stateFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if _, cerr := os.Stat(filepath.Join(stateDir, name, creatingFile)); cerr == nil {
			return nil, fmt.Errorf("lab %q: %w (creation did not finish; take it down to clean up)", name, ErrNotFound)
		}
		return nil, fmt.Errorf("lab %q: %w (no %s)", name, ErrNotFound, p)
	}
	if err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	var l Lab
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("lab %q: corrupt state file %s: %v", name, p, err)
	}
	if l.Config.Name != name || l.Prefix != Prefix(name) {
		return nil, fmt.Errorf("lab %q: state file %s describes lab %q", name, p, l.Config.Name)
	}
	l.Config.StateDir = stateDir
	return &l, nil
}
