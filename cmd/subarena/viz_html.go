package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/htmlviz"
	"github.com/subarena/subarena/trace/check"
)

// vizHTML writes the interactive viewer's page for the run fl names, and the run to
// compare it with, if any.
func vizHTML(cmd *cobra.Command, file string, fl vizFlags) error {
	if fl.comparePolicy != "" && fl.comparePlan != "" {
		return errors.New("--compare and --compare-plan both name a second run; give one of them")
	}
	// Every flag is checked before the trace is read and replayed.
	if _, err := subarena.ParsePolicy(fl.policy); err != nil {
		return err
	}
	if _, err := arena.ParseFit(fl.fit); err != nil {
		return err
	}
	if fl.comparePolicy != "" {
		if _, err := subarena.ParsePolicy(fl.comparePolicy); err != nil {
			return &flagError{flag: "--compare", err: err}
		}
	}
	p, err := loadProgram(file)
	if err != nil {
		return err
	}
	var (
		runs       []bench.ViewerRun
		planPaths  []string
		planChecks []*check.Report
	)
	addPlan := func(path string) error {
		plan, rep, err := checkedPlan(p, path)
		if err != nil {
			return err
		}
		runs = append(runs, bench.ViewerRun{Label: planTitle(path, plan), Plan: plan, Report: rep})
		planPaths, planChecks = append(planPaths, path), append(planChecks, rep)
		return nil
	}
	addReplay := func(policy string) error {
		res, err := replayUnder(p, policy, fl.fit)
		if err != nil {
			return err
		}
		rep, err := check.Plan(p, res.Plan)
		if err != nil {
			return err
		}
		if !rep.Safe {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: the replay under %s is UNSAFE: %d violations (drawn)\n", res.Policy,
				len(rep.Violations))
		}
		runs = append(runs, bench.ViewerRun{Replay: res, Report: rep})
		return nil
	}
	if fl.planPath != "" {
		err = addPlan(fl.planPath)
	} else {
		err = addReplay(fl.policy)
	}
	if err != nil {
		return err
	}
	switch {
	case fl.comparePolicy != "":
		err = addReplay(fl.comparePolicy)
	case fl.comparePlan != "":
		err = addPlan(fl.comparePlan)
	}
	if err != nil {
		return err
	}
	page, err := bench.ViewerPage(p, runs...)
	if err != nil {
		return err
	}
	if err := writeFile(cmd, fl.out, func(w io.Writer) error { return htmlviz.Write(w, page) }); err != nil {
		return err
	}
	return unsafePlans(cmd, file, planPaths, planChecks)
}

// flagError names the flag whose value err refuses.
type flagError struct {
	flag string
	err  error
}

func (e *flagError) Error() string {
	return e.flag + ": " + strings.TrimPrefix(e.err.Error(), "subarena: ")
}

func (e *flagError) Unwrap() error { return e.err }
