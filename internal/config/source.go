package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Where the configuration file comes from. Only the invoker names it: --config,
// ASTER_CONFIG, or the operator's own locations. The working directory is never
// searched: it is usually a repository under review, and a repository must not
// configure the program reviewing it (SECURITY.md O1).
const (
	// ConfigEnvVar names the configuration file as --config does; the flag wins.
	ConfigEnvVar = "ASTER_CONFIG"
	// SystemConfigFile is the machine's configuration, read when the user has none.
	SystemConfigFile = "/etc/aster/aster.yaml"
	// WorkdirConfigName is the file name earlier versions read from the working
	// directory. Aster now only says that it is there and ignored.
	WorkdirConfigName = "aster.yaml"
)

// Source is where the file layer of a Config came from.
type Source struct {
	// File is the configuration file read; empty when none was.
	File string
	// NamedBy says how File was chosen: "--config", ConfigEnvVar, "user" (the
	// user's configuration directory) or "system" (SystemConfigFile).
	NamedBy string
	// Trusted reports that File passed the ownership rule (trust.go): the
	// invoking user or root owns it and its directory, and no one else can
	// write either. Only such a file may name a host program or an endpoint that
	// receives a secret.
	Trusted bool
	// IgnoredWorkdir is an aster.yaml of the working directory that exists and
	// was not read (it is not File); empty when there is none.
	IgnoredWorkdir string
}

// Line is the one line a command prints at start naming the file in use.
func (s Source) Line() string {
	if s.File == "" {
		return "configuration: no configuration file; defaults and ASTER_* variables only"
	}
	by := map[string]string{"user": "the user's configuration", "system": "the system configuration"}[s.NamedBy]
	if by == "" {
		by = "named by " + s.NamedBy
	}
	return fmt.Sprintf("configuration: %s (%s)", s.File, by)
}

// Warning is the line that says a working-directory aster.yaml was ignored; empty
// when there is none.
func (s Source) Warning() string {
	if s.IgnoredWorkdir == "" {
		return ""
	}
	return fmt.Sprintf("%s is ignored: Aster never reads its configuration from the working directory; name a file with --config or %s", s.IgnoredWorkdir, ConfigEnvVar)
}

// UserConfigFile is the user's configuration file: $XDG_CONFIG_HOME/aster/aster.yaml,
// else ~/.config/aster/aster.yaml; empty without either variable.
func UserConfigFile(getenv func(string) string) string {
	if x := strings.TrimSpace(getenv("XDG_CONFIG_HOME")); x != "" {
		return filepath.Join(x, "aster", "aster.yaml")
	}
	if h := strings.TrimSpace(getenv("HOME")); h != "" {
		return filepath.Join(h, ".config", "aster", "aster.yaml")
	}
	return ""
}

// loadEnv is what Load takes from the process besides the environment
// variables; tests give their own.
type loadEnv struct {
	systemFile string
	uid        int
	// workdir is where an ignored aster.yaml is looked for ("" is the
	// process's working directory).
	workdir string
}

func processLoadEnv() loadEnv {
	return loadEnv{systemFile: SystemConfigFile, uid: os.Geteuid()}
}

// find chooses the configuration file, first match wins: path (--config), then
// ASTER_CONFIG, then the user's file, then the system's, each of the last two
// only if present. explicit reports a file that must exist.
func (e loadEnv) find(path string, getenv func(string) string) (src Source, explicit bool) {
	if path != "" {
		return Source{File: path, NamedBy: "--config"}, true
	}
	if v := strings.TrimSpace(getenv(ConfigEnvVar)); v != "" {
		return Source{File: v, NamedBy: ConfigEnvVar}, true
	}
	if p := UserConfigFile(getenv); p != "" && present(p) {
		return Source{File: p, NamedBy: "user"}, false
	}
	if present(e.systemFile) {
		return Source{File: e.systemFile, NamedBy: "system"}, false
	}
	return Source{}, false
}

// present reports whether path exists. One that cannot be looked at (in a
// directory only root may read, as a hardened /etc/aster is for a service
// user) counts as absent: it was not meant for this user.
func present(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ignoredWorkdir is the working directory's aster.yaml when it exists and is not
// the file read.
func (e loadEnv) ignoredWorkdir(read string) string {
	dir := e.workdir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return ""
		}
	}
	p := filepath.Join(dir, WorkdirConfigName)
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	if read != "" {
		if ri, err := os.Stat(read); err == nil && os.SameFile(fi, ri) {
			return ""
		}
	}
	return p
}

// loaderEnvVars are the variables that choose the file, read by Load before
// any setting: listed here so that they are described and CheckEnv accepts them.
func loaderEnvVars() []envVar {
	return []envVar{
		parsed(ConfigEnvVar, func(string) error { return nil }, "configuration file, as --config (which wins over it)"),
	}
}
