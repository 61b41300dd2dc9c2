package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// TestK8sJobCapacityPodsRun runs the command of every pod of a generated
// capacity Job, as the Job controller would (JOB_COMPLETION_INDEX set, the
// results volume mounted), against a local pool: the pods meet in the
// rendezvous on the volume, print one result, and their run folders
// judge again to it.
func TestK8sJobCapacityPodsRun(t *testing.T) {
	t.Parallel()
	url, _, _ := poolTarget(t)
	code, stdout, stderr := runCmd(t, "k8s-job", "--capacity", "--shards", "2", "--target", url, "--window", "1s",
		"--start-at", time.Now().Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano),
		"--", "--slo", "p99<=100ms", "--start-rate", "200", "--max-rate", "240", "--step", "1s", "--warmup", "0.2s", "--json", "--max-lateness", "30ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "kind: ConfigMap") {
		t.Errorf("a capacity Job ships no profile:\n%s", stdout)
	}
	job := printedJob(t, stdout)
	c := job.Spec.Template.Spec.Containers[0]
	if c.Command[0] != "ratecheck" || c.Args[0] != "capacity" {
		t.Fatalf("command %v %v", c.Command, c.Args)
	}
	results := t.TempDir()
	codes, outs := runPods(t, job, c.Args, results)
	if outs[0].String() != outs[1].String() || codes[0] != codes[1] {
		t.Errorf("the pods judged otherwise: exit %d and %d\n%s\n%s", codes[0], codes[1], outs[0].String(), outs[1].String())
	}
	dirs, _ := filepath.Glob(filepath.Join(results, job.Name, "*-capacity-shard*"))
	if _, again, stderr := runCmd(t, append([]string{"analyze", "--json"}, dirs...)...); again != outs[0].String() {
		t.Errorf("analyze of %v judged otherwise:\n%s%s", dirs, again, stderr)
	}
	if _, err := os.Stat(filepath.Join(results, job.Name, "rendezvous", "segment-0000", "shard-1.json")); err != nil {
		t.Errorf("no rendezvous on the volume: %v", err)
	}
}

func TestK8sJobCapacityUsage(t *testing.T) {
	t.Parallel()
	base := []string{"k8s-job", "--capacity", "--shards", "3", "--target", "http://api.internal"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "--profile", "../../profiles/capacity.yaml", "--", "--slo", "p99<=100ms"), "--profile is for an attack: a --capacity search has none"},
		{base, `after --: --slo "": want a quantile`},
		{append(base, "--", "--slo", "p99<=100ms", "--bogus"), "after --: flag provided but not defined: -bogus"},
		{append(base, "--", "--slo", "p99<=100ms", "--rendezvous", "/tmp/x"), "after --: --rendezvous is set by k8s-job itself"},
		{append(base, "--", "--slo", "p99<=100ms", "--sources", "10.0.0.1"), "after --: --sources is set by k8s-job itself"},
		{append(base, "--", "--slo", "p99<=100ms", "--shared-sources"), "after --: --shared-sources is set by k8s-job itself"},
		{append(base, "--sources", "2001:db8:2::/112", "--", "--slo", "p99<=100ms"), "--sources needs --node"},
		{append(base, "--sources", "2001:db8:2::/48", "--node", "n1", "--", "--slo", "p99<=100ms"), `--sources: "2001:db8:2::/48": a /48 is more than a pool may hold`},
		{append(base, "--sources", "198.18.0.0/24", "--node", "n1", "--", "--slo", "p99<=100ms"), "--sources 198.18.0.0/24 holds 254 addresses, too few for --max-rate 10000: 10000 requests per second over 3 shards need 1667 source addresses a shard (each at most half its limit of 240 per 1m0s), but this shard is given 84"},
		// The default --max-rate 10000 at 2/s an address (half of 240 a
		// minute) needs 5000 addresses; three pods have three.
		{append(base, "--", "--slo", "p99<=100ms"), "--max-rate 10000: 10000 requests per second over 3 shards need 1667 source addresses a shard (each at most half its limit of 240 per 1m0s), but this shard is given 1, and a pod sends from its one address: pass -- --max-rate 6 or lower, or --shards 5000"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, stderr := runCmd(t, append(base, "--", "--slo", "p99<=100ms", "--max-rate", "6")...); code != exitUsage || !strings.Contains(stderr, "after --: max rate 6: want a rate at or above the start rate 100") {
		t.Errorf("a search below its start rate: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"--", "--slo", "p99<=100ms", "--start-rate", "1", "--max-rate", "6"}, {"--window", "1s", "--", "--slo", "p99<=100ms", "--max-rate", "360"},
		{"--", "--slo", "p99<=100ms", "--through-limit"}} {
		if code, stdout, stderr := runCmd(t, append(base, args...)...); code != exitOK || !strings.Contains(stdout, "- capacity\n") {
			t.Errorf("%v: exit %d, %s; want the Job", args, code, stderr)
		}
	}
}

// TestK8sJobSharedPool: with --sources and --node the pods run on that
// node in its network and share the pool: each shard of the search sends
// from its every n-th address from the i-th, so no two pods send from one
// address and together they send from the addresses one process would.
// The pods are run here, as in TestK8sJobCapacityPodsRun, from a pool of
// 127.0.x addresses.
func TestK8sJobSharedPool(t *testing.T) {
	t.Parallel()
	url, _, seen := poolTarget(t)
	code, stdout, stderr := runCmd(t, "k8s-job", "--capacity", "--shards", "2", "--target", url, "--window", "1s", "--node", "node-7", "--sources", "127.0.9.0/24",
		"--start-at", time.Now().Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano),
		"--", "--slo", "p99<=100ms", "--start-rate", "200", "--max-rate", "480", "--step", "1s", "--warmup", "0.2s", "--json", "--max-lateness", "30ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	job := printedJob(t, stdout)
	pod := job.Spec.Template.Spec
	if !pod.HostNetwork || pod.NodeSelector["kubernetes.io/hostname"] != "node-7" {
		t.Errorf("hostNetwork %v, nodeSelector %v: want the pods in node-7's network", pod.HostNetwork, pod.NodeSelector)
	}
	results := t.TempDir()
	runPods(t, job, pod.Containers[0].Args, results)
	// 480/s at 120/s an address (half of 240 a second) takes 4
	// addresses: 127.0.9.1 to .4, shard 0 the odd ones, shard 1 the even.
	want := [][]string{{"127.0.9.1", "127.0.9.3"}, {"127.0.9.2", "127.0.9.4"}}
	for i := range want {
		// A folder's name starts with the time its shard began, which on
		// a loaded host can put shard 1 before shard 0: its suffix says
		// which shard it is.
		dirs, _ := filepath.Glob(filepath.Join(results, job.Name, fmt.Sprintf("*-capacity-shard%dof2", i)))
		if len(dirs) != 1 {
			t.Fatalf("shard %d's run folders %v", i, dirs)
		}
		if info := runInfo(t, dirs[0]); !slices.Equal(info.Sources, want[i]) || info.SourcePool != "127.0.9.0/24" {
			t.Errorf("shard %d sent from %v (pool %q), want %v of 127.0.9.0/24", i, info.Sources, info.SourcePool, want[i])
		}
	}
	for a := range seen() {
		if !slices.Contains(append(want[0], want[1]...), a) {
			t.Errorf("the target saw %s, not one of the pool's first four", a)
		}
	}
}

// printedJob is the Job, the last document k8s-job printed.
func printedJob(t *testing.T, stdout string) batchv1.Job {
	t.Helper()
	docs := strings.Split(stdout, "\n---\n")
	var job batchv1.Job
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &job); err != nil {
		t.Fatal(err)
	}
	return job
}

// runPods runs the job's pods side by side in this process, each with the
// container's args for its completion index and /results under results,
// and returns their exit codes and stdout; a pod that did not end with a
// verdict (passing, failing or inconclusive: a loaded host may fail the
// first step, and the plumbing is what is tested) fails the test.
func runPods(t *testing.T, job batchv1.Job, podArgs []string, results string) ([]int, []bytes.Buffer) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make([]int, *job.Spec.Completions)
	outs, logs := make([]bytes.Buffer, len(codes)), make([]bytes.Buffer, len(codes))
	for i := range codes {
		var args []string
		for _, a := range podArgs {
			a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))
			args = append(args, strings.Replace(a, "/results", results, 1))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = run(context.Background(), args, &outs[i], &logs[i])
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != exitOK && code != exitCheckFailed && code != exitInconclusive {
			t.Fatalf("pod %d: exit %d\n%s%s", i, code, outs[i].String(), logs[i].String())
		}
	}
	return codes, outs
}
