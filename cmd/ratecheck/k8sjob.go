package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
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

--capacity prints instead the Job of a knee search sharded over N pods in
lockstep: pod i runs "ratecheck capacity --shard i/N" from its own address
and meets the others after every step in /results/<name>/rendezvous; the
search's flags (--slo among them) go after --. Each pod sends from one
address, so every step's addresses must fit the shards: a search whose
--max-rate needs more is refused. Without --target the reference target
is deployed with a pool of 10 workers of 20 ms (500/s).

  ratecheck k8s-job --capacity --shards 6 --window 1s -- --slo 'p99<=100ms' --max-rate 700 | kubectl apply -f -

--sources gives the pods a pool of addresses instead of one each: a range
or prefix routed to one node as local (--node), where the pods run in the
node's network (hostNetwork) and each sends from its own share of the pool
(an attack's streams split by source, a search's every n-th address). How
a node gets a prefix: docs/network.md.

  ratecheck k8s-job --capacity --shards 4 --node node-7 --sources 2001:db8:2::/80 --target http://[2001:db8:1::1]:8080 -- --slo 'p99<=100ms' --max-rate 4000

deploy/kubernetes/README.md has the image to build, and the commands to
wait for the Job, copy the run folders out and merge them with analyze.

Exit codes: 0 printed, 2 bad usage or profile (one a shard would refuse:
its ceilings are checked per shard), or with --capacity a search a shard
would refuse, 130 or 143 interrupted (SIGINT or SIGTERM).
`

func runK8sJob(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		profile, image, target, name, namespace, claim, claimSize, startAt, shardsArg string
		sources, node                                                                 string
		window, startIn                                                               time.Duration
		search                                                                        bool
	)
	fs := newFlagSet("k8s-job", "--profile FILE --shards N [flags] [-- attack flags]\n       ratecheck k8s-job --capacity --shards N [flags] -- --slo OBJECTIVE [capacity flags]", k8sJobHelp, stderr)
	fs.StringVar(&profile, "profile", "", "scenario `file` (required, but with --capacity)")
	fs.BoolVar(&search, "capacity", false, "run the knee search (ratecheck capacity --shard i/N, the shards in lockstep) instead of an attack: no --profile; its flags after --")
	fs.StringVar(&shardsArg, "shards", "", "`number` of shards, one pod each, 1 to 1000 (required)")
	fs.StringVar(&image, "image", "ratecheck:"+version, "container `image` with ratecheck on PATH (see deploy/kubernetes/Dockerfile)")
	fs.StringVar(&target, "target", "", "base `URL` the shards attack (default: deploy the reference target alongside)")
	fs.StringVar(&name, "name", "", "name of the Job, prefix of every object (default: ratecheck-<profile name>, or ratecheck-knee with --capacity)")
	fs.StringVar(&namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fs.StringVar(&claim, "claim", "", "existing PersistentVolumeClaim for the results (default: create <name>-results, ReadWriteMany)")
	fs.StringVar(&claimSize, "claim-size", "1Gi", "size of the claim created when --claim is not given")
	fs.DurationVar(&window, "window", 0, "the run's window (default: the profile's; with --capacity the documented 60s)")
	fs.DurationVar(&startIn, "start-in", 2*time.Minute, "start the shards this long after now (time to apply, schedule and pull the image)")
	fs.StringVar(&startAt, "start-at", "", "start the shards at this RFC 3339 `instant` instead of --start-in")
	fs.StringVar(&sources, "sources", "", "`pool` of addresses, ranges and prefixes routed to --node as local, shared by the pods, each sending from its own share (default: each pod its own address); the pods run in the node's network")
	fs.StringVar(&node, "node", "", "run every pod on this `node` (the one --sources is routed to) instead of spreading them over nodes")
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	extra := fs.Args()
	shards, err := parseShards(shardsArg)
	if err == nil && (window < 0 || startIn < 0) {
		err = errors.New("--window and --start-in must not be negative")
	}
	if err == nil {
		err = checkPassed(extra, search)
	}
	start := time.Now().Add(startIn).Truncate(time.Second)
	if err == nil && startAt != "" {
		start, err = parseInstant("--start-at", startAt)
	}
	if err == nil && target != "" {
		target, err = checkTarget(target)
	}
	var pool client.Pool
	if err == nil {
		pool, err = parseSources("--sources", sources)
	}
	if err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	o := kubernetes.Options{Name: name, Namespace: namespace, Shards: shards, Image: image, Target: target, Window: window,
		StartAt: start, Claim: claim, NewClaim: claim == "", ClaimSize: claimSize, Args: extra, Sources: pool.String(), Node: node}
	if search {
		err = capacityJob(&o, profile, pool)
	} else {
		err = profileJob(&o, profile, pool)
	}
	if err == nil && o.NewClaim {
		o.Claim = o.Name + "-results"
	}
	if err == nil {
		err = k8sFlagError(o.Check())
	}
	if err != nil {
		return usageErr(stderr, "k8s-job", "%v", err)
	}
	if err := kubernetes.Write(stdout, o); err != nil {
		fmt.Fprintf(stderr, "ratecheck k8s-job: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// profileJob sets the profile of the attack's Job o, and its default
// name, refusing a profile with credentials or one a shard would refuse.
func profileJob(o *kubernetes.Options, profile string, pool client.Pool) error {
	if profile == "" {
		return errors.New("--profile is required")
	}
	text, err := scenario.ReadProfile(profile)
	if err != nil {
		return fmt.Errorf("--profile: %v", err)
	}
	prof, err := scenario.ParseProfile(profile, text)
	if err != nil {
		return err
	}
	if prof.Contract != "" {
		// The Job's ConfigMap holds the profile alone: the contract file,
		// and the credentials its identities read, are not in the pod.
		return fmt.Errorf("%s names a contract (%s): a Job carries the profile only, not the contract or its identities' credentials; write the streams' requests in the profile", profile, prof.Contract)
	}
	if names := append(prof.HeaderCredentials(), scenario.QueryCredentials(prof)...); len(names) > 0 {
		return fmt.Errorf("%s carries credentials (%s): a ConfigMap is no place for them", profile, strings.Join(names, ", "))
	}
	if err := checkShards(prof, profile, o.Window, o.Shards, o.Args, pool); err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = kubernetes.DefaultName(prof.Name)
	}
	o.ProfileFile, o.Profile = filepath.Base(profile), text
	return nil
}

// k8sFlags are the k8s-job flags that set kubernetes.Options' fields, by
// the field's name in a *kubernetes.FieldError.
var k8sFlags = map[string]string{"Name": "--name", "Namespace": "--namespace", "Shards": "--shards", "Image": "--image",
	"Claim": "--claim", "ClaimSize": "--claim-size", "Sources": "--sources", "Node": "--node", "Target": "--target"}

// k8sFlagError is err with the fields a *kubernetes.FieldError names
// called by the k8s-job flags that set them.
func k8sFlagError(err error) error {
	var fe *kubernetes.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return errors.New(fe.Named(func(field string) string { return k8sFlags[field] }))
}
