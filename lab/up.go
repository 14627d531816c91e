package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Up creates a lab. It fails if a lab of that name (or any leftover of one)
// exists. On any failure it removes everything it made.
func Up(ctx context.Context, cfg Config) (_ *Lab, err error) {
	if err := RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name := cfg.Name
	if what := exists(cfg.StateDir, name); what != "" {
		return nil, fmt.Errorf("lab %q already exists (%s): take it down first", name, what)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab %q: state dir: %w", name, err)
	}
	dir := filepath.Join(cfg.StateDir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lab %q already exists (state dir %s): take it down first", name, dir)
		}
		return nil, fmt.Errorf("lab %q: state dir: %w", name, err)
	}
	// From here on we own the name: undo everything on failure.
	defer func() {
		if err != nil {
			if _, derr := Down(cfg.StateDir, name); derr != nil {
				err = fmt.Errorf("%w (cleanup also failed: %v)", err, derr)
			}
		}
	}()
	marker := fmt.Sprintf("pid %d at %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, creatingFile), []byte(marker), 0o644); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}

	cgroupRoot := cgroupRootFor(name)
	l := plan(cfg, cgroupRoot)
	if cgroupRoot != "" {
		if err := l.makeCgroups(); err != nil {
			return nil, fmt.Errorf("lab %q: %w", name, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.build(ctx); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	l.Created = time.Now().UTC()
	if err := l.save(); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	os.Remove(filepath.Join(dir, creatingFile))
	return l, nil
}
