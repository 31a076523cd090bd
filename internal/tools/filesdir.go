package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// dirStore keeps the files in a directory on disk (hitch serve), through
// os.Root: no path, symlink included, resolves outside it.
type dirStore struct{ root string }

// Dir is the FileStore of a directory, created on first use.
func Dir(root string) FileStore { return dirStore{root: root} }

func (d dirStore) open() (*os.Root, error) {
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return nil, errors.New("the files root cannot be created")
	}
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, errors.New("the files root cannot be opened")
	}
	return r, nil
}

// do runs f in the root, with its errors made readable.
func (d dirStore) do(f func(r *os.Root) error) error {
	r, err := d.open()
	if err != nil {
		return err
	}
	defer r.Close()
	return dirError(f(r))
}

func (d dirStore) List(_ context.Context, dir string) (names []string, err error) {
	err = d.do(func(r *os.Root) error {
		f, err := r.Open(dir)
		if err != nil {
			return err
		}
		defer f.Close()
		entries, err := f.ReadDir(-1)
		if err != nil {
			if errors.Is(err, fs.ErrInvalid) || errors.Is(err, syscall.ENOTDIR) {
				return PathError(dir, ErrNotDir)
			}
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 && isDir(r, path.Join(dir, name)) {
				name += "/"
			}
			names = append(names, name)
		}
		slices.Sort(names)
		return nil
	})
	return names, err
}

// isDir tells whether name, a symlink, resolves to a directory inside the root.
func isDir(r *os.Root, name string) bool {
	fi, err := r.Stat(name)
	return err == nil && fi.IsDir()
}

func (d dirStore) Read(_ context.Context, name string, limit int64) (b []byte, err error) {
	err = d.do(func(r *os.Root) error {
		f, err := r.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return PathError(name, ErrIsDir)
		}
		if b, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
			return err
		}
		if int64(len(b)) > limit {
			return fmt.Errorf("%s: larger than %d bytes", name, limit)
		}
		return nil
	})
	return b, err
}

func (d dirStore) Write(_ context.Context, name string, data []byte) error {
	return d.do(func(r *os.Root) error {
		if err := mkParents(r, name); err != nil {
			return err
		}
		return r.WriteFile(name, data, 0o644)
	})
}

func (d dirStore) Append(_ context.Context, name string, data []byte) error {
	return d.do(func(r *os.Root) error {
		if err := mkParents(r, name); err != nil {
			return err
		}
		f, err := r.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

func (d dirStore) Delete(_ context.Context, name string) error {
	return d.do(func(r *os.Root) error {
		// Stat follows symlinks: a link resolving outside the root is refused
		// like any other path leaving it.
		fi, err := r.Stat(name)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return PathError(name, ErrIsDir)
		}
		return r.Remove(name)
	})
}

// mkParents creates the directories above name.
func mkParents(r *os.Root, name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	return r.MkdirAll(dir, 0o755)
}

// dirError makes an error of os.Root readable for the model, without the
// root's location on disk.
func dirError(err error) error {
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	name := filepath.ToSlash(pe.Path)
	switch {
	case strings.Contains(pe.Err.Error(), "path escapes from parent"):
		return fmt.Errorf("path %q resolves outside the files root", name)
	case errors.Is(pe.Err, fs.ErrNotExist):
		return PathError(name, ErrNotExist)
	case errors.Is(pe.Err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", name)
	}
	return fmt.Errorf("%s: %v", name, pe.Err)
}

// OpenFile implements FileOpener: the file streamed, not read whole. The
// root is closed with the file.
func (d dirStore) OpenFile(_ context.Context, name string) (io.ReadCloser, error) {
	r, err := d.open()
	if err != nil {
		return nil, err
	}
	f, err := r.Open(name)
	if err != nil {
		r.Close()
		return nil, dirError(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = PathError(name, ErrIsDir)
	}
	if err != nil {
		f.Close()
		r.Close()
		return nil, dirError(err)
	}
	return rootFile{f, r}, nil
}

type rootFile struct {
	*os.File
	root *os.Root
}

func (f rootFile) Close() error {
	err := f.File.Close()
	f.root.Close()
	return err
}
