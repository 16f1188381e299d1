package perf

import (
	"strings"
)

// getopt.go reads a command line the way glibc's getopt_long does for
// perf_analyzer (short options "vdazc:u:m:x:b:t:p:i:H:l:r:s:f:", opterr
// 0), and turns its failures into perf_analyzer's messages. It is a small
// table-driven scanner rather than a flag library because perf_analyzer's
// scripts depend on glibc's behaviour, which no Go flag package has as a
// whole:
//
//   - "--name=value" and "--name value" both work; an option without an
//     argument rejects "=value";
//   - an unambiguous prefix of a long name is the option ("--concurrency"
//     is --concurrency-range); an exact name wins over longer ones;
//   - short options cluster ("-va"), and a short option's value is the
//     rest of its word or the next word ("-b4", "-b 4");
//   - words that are not options are skipped over (glibc permutes them to
//     the end; perf_analyzer never reads them), and "--" ends the options.

// argKind says whether an option takes a value.
type argKind uint8

const (
	noArg argKind = iota
	requiredArg
)

// optDef is one entry of the option table: a long name, a short letter, or
// both (perf_analyzer gives -p the long name --measurement-interval, and
// so on).
type optDef struct {
	long  string // "" for short-only options
	short byte   // 0 for long-only options
	arg   argKind
	// exact marks an option of ours rather than perf_analyzer's: only its
	// whole name selects it, so every prefix perf_analyzer reads as one of
	// its own options ("--a" for --async, "--lat" for
	// --latency-threshold) reads the same here.
	exact bool
}

// optEvent is one option read from the command line.
type optEvent struct {
	def   *optDef
	value string
	// short reports that the option was given by its letter ("-b"): the
	// error texts name it the way it was given ("Failed to parse -b. ...").
	short bool
}

// name is the option as perf_analyzer's messages name it: "-b" when it was
// given as a short option, "--measurement-interval" otherwise.
func (e optEvent) name() string {
	if e.short {
		return "-" + string(e.def.short)
	}
	return "--" + e.def.long
}

// scanError is a command line getopt_long rejects, with the message
// perf_analyzer prints for it (without the synopsis: these errors are
// thrown past Usage).
type scanError struct{ msg string }

func (e *scanError) Error() string { return e.msg }

// scan reads args (without the program name) against defs. It returns the
// options in order, the words that are not options, and the first error.
func scan(args []string, defs []optDef) (events []optEvent, rest []string, err error) {
	byShort := map[byte]*optDef{}
	for i := range defs {
		if defs[i].short != 0 {
			byShort[defs[i].short] = &defs[i]
		}
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return events, append(rest, args[i+1:]...), nil
		case strings.HasPrefix(arg, "--"):
			name, value, hasValue := strings.Cut(arg[2:], "=")
			d, ok := lookupLong(defs, name)
			if !ok {
				// Unknown or ambiguous: glibc sets optopt to 0.
				return events, rest, &scanError{"Error: Invalid long option '" + arg + "'"}
			}
			switch {
			case d.arg == noArg && hasValue:
				// glibc sets optopt to the option and optarg to NULL,
				// which perf_analyzer reads as a missing value.
				return events, rest, &scanError{"Error: Missing value for option '" + arg + "'"}
			case d.arg == requiredArg && !hasValue:
				if i+1 == len(args) {
					return events, rest, &scanError{"Error: Missing value for option '" + arg + "'"}
				}
				i++
				value = args[i]
			}
			events = append(events, optEvent{def: d, value: value})
		case len(arg) > 1 && arg[0] == '-':
			for j := 1; j < len(arg); j++ {
				c := arg[j]
				d, ok := byShort[c]
				if !ok {
					return events, rest, &scanError{"Error: Invalid short option '-" + string(c) + "'"}
				}
				if d.arg == noArg {
					events = append(events, optEvent{def: d, short: true})
					continue
				}
				value := arg[j+1:]
				if value == "" {
					if i+1 == len(args) {
						// glibc sets optopt to the letter, so perf_analyzer
						// reports an invalid short option, not a missing value.
						return events, rest, &scanError{"Error: Invalid short option '-" + string(c) + "'"}
					}
					i++
					value = args[i]
				}
				events = append(events, optEvent{def: d, value: value, short: true})
				break
			}
		default:
			rest = append(rest, arg)
		}
	}
	return events, rest, nil
}

// lookupLong finds the option named name, or the one option (not marked
// exact) name is a prefix of. Several candidates are ambiguous unless they are the same
// entry; there is no short-letter fallback (perf_analyzer does not use
// getopt_long_only).
func lookupLong(defs []optDef, name string) (*optDef, bool) {
	if name == "" {
		return nil, false
	}
	var found *optDef
	for i := range defs {
		d := &defs[i]
		if d.long == "" {
			continue
		}
		if d.long == name {
			return d, true
		}
		if !d.exact && strings.HasPrefix(d.long, name) {
			if found != nil {
				return nil, false
			}
			found = d
		}
	}
	return found, found != nil
}
