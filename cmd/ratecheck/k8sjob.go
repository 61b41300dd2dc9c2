package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/deploy/kubernetes"
)

const k8sJobHelp = `
Print, as YAML, the Kubernetes manifests that run an attack as N shards of
an Indexed Job: pod i runs "ratecheck attack --shard i/N" with the profile
(shipped in a ConfigMap), every pod starts at the same instant (--start-in
from now, or --start-at), sends from its own address, and writes its run
folder to a shared PersistentVolumeClaim under /results/<name>.

Without --target the reference target is deployed too (a Deployment and a
Service named <name>-target) and the shards attack it.

Arguments after -- are passed to every shard's attack, such as
-- --max-rate 5000 --timeout 2s.

  ratecheck k8s-job --profile profiles/capacity.yaml --shards 3 --target http://api.internal | kubectl apply -f -

deploy/kubernetes/README.md has the image to build, and the commands to
wait for the Job, copy the run folders out and merge them with analyze.

Exit codes: 0 printed, 2 bad usage or profile (one a shard would refuse:
its ceilings are checked per shard), 130 or 143 interrupted (SIGINT or
SIGTERM).
`

func runK8sJob(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		profile, image, target, name, namespace, claim, claimSize, startAt, shardsArg string
		window, startIn                                                               time.Duration
	)
	fs := newFlagSet("k8s-job", "--profile FILE --shards N [flags] [-- attack flags]", k8sJobHelp, stderr)
	fs.StringVar(&profile, "profile", "", "scenario `file` (required)")
	fs.StringVar(&shardsArg, "shards", "", "`number` of shards, one pod each, 1 to 1000 (required)")
	fs.StringVar(&image, "image", "ratecheck:"+version, "container `image` with ratecheck on PATH (see deploy/kubernetes/Dockerfile)")
	fs.StringVar(&target, "target", "", "base `URL` the shards attack (default: deploy the reference target alongside)")
	fs.StringVar(&name, "name", "", "name of the Job, prefix of every object (default: ratecheck-<profile name>)")
	fs.StringVar(&namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fs.StringVar(&claim, "claim", "", "existing PersistentVolumeClaim for the results (default: create <name>-results, ReadWriteMany)")
	fs.StringVar(&claimSize, "claim-size", "1Gi", "size of the claim created when --claim is not given")
	fs.DurationVar(&window, "window", 0, "the run's window (default: the profile's)")
	fs.DurationVar(&startIn, "start-in", 2*time.Minute, "start the shards this long after now (time to apply, schedule and pull the image)")
	fs.StringVar(&startAt, "start-at", "", "start the shards at this RFC 3339 `instant` instead of --start-in")
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	extra := fs.Args()
	if profile == "" {
		return usageErr(stderr, "k8s-job", "--profile is required")
	}
	shards, err := parseShards(shardsArg)
	if err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	if window < 0 || startIn < 0 {
		return usageErr(stderr, "k8s-job", "--window and --start-in must not be negative")
	}
	if err := checkPassed(extra); err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	start := time.Now().Add(startIn).Truncate(time.Second)
	if startAt != "" {
		if start, err = parseInstant("--start-at", startAt); err != nil {
			return usageErr(stderr, "k8s-job", "%v", err)
		}
	}
	if target != "" {
		if target, err = checkTarget(target); err != nil {
			return usageErr(stderr, "k8s-job", "%v", err)
		}
	}
	text, err := scenario.ReadProfile(profile)
	if err != nil {
		return usageErr(stderr, "k8s-job", "--profile: %v", err)
	}
	prof, err := scenario.ParseProfile(profile, text)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck k8s-job: %v\n", err)
		return exitUsage
	}
	if names := append(prof.HeaderCredentials(), scenario.QueryCredentials(prof)...); len(names) > 0 {
		return usageErr(stderr, "k8s-job", "%s carries credentials (%s): a ConfigMap is no place for them", profile, strings.Join(names, ", "))
	}
	if err := checkShards(prof, profile, window, shards, extra); err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	if name == "" {
		name = kubernetes.DefaultName(prof.Name)
	}
	newClaim := claim == ""
	if newClaim {
		claim = name + "-results"
	}
	o := kubernetes.Options{Name: name, Namespace: namespace, ProfileFile: filepath.Base(profile), Profile: text,
		Shards: shards, Image: image, Target: target, Window: window, StartAt: start, Claim: claim, NewClaim: newClaim, ClaimSize: claimSize, Args: extra}
	if err := o.Check(); err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	if err := kubernetes.Write(stdout, o); err != nil {
		fmt.Fprintf(stderr, "ratecheck k8s-job: %v\n", err)
		return exitUsage
	}
	return exitOK
}
