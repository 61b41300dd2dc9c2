package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/deploy/kubernetes"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// TestK8sJobPodsRun runs the command of every pod of a generated Job, as
// the Job controller would (JOB_COMPLETION_INDEX set, the profile and the
// results volume mounted), against a local target: the shards start
// together, and their run folders merge into the whole profile.
func TestK8sJobPodsRun(t *testing.T) {
	t.Parallel()
	// The pods share this machine's address here, not in a cluster: lift
	// the limit so that no request is refused for it.
	url := startTarget(t, 2*time.Second, func(c *refserver.Config) { c.RESTLimit = 100000 }, nil)
	code, stdout, stderr := runCmd(t, "k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--target", url,
		"--window", "2s", "--start-at", time.Now().Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	docs := strings.Split(stdout, "\n---\n")
	var job batchv1.Job
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if c.Command[0] != "ratecheck" {
		t.Fatalf("command %v", c.Command)
	}
	profiles, _ := filepath.Abs("../../profiles")
	results := t.TempDir()
	var wg sync.WaitGroup
	codes := make([]int, *job.Spec.Completions)
	logs := make([]bytes.Buffer, len(codes))
	for i := range codes {
		var args []string
		for _, a := range c.Args {
			a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))
			a = strings.Replace(a, "/etc/ratecheck", profiles, 1)
			a = strings.Replace(a, "/results", results, 1)
			args = append(args, a)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = run(context.Background(), args, &logs[i], &logs[i])
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != exitOK {
			t.Fatalf("pod %d: exit %d\n%s", i, code, logs[i].String())
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(results, job.Name, "*"))
	in, err := analyze.Read(dirs)
	if err != nil || len(dirs) != 3 {
		t.Fatalf("%d run folders: %v", len(dirs), err)
	}
	bySource := map[string]int{}
	for i := range in.Records {
		bySource[in.Tables().Labels(&in.Records[i]).Source]++
	}
	rep, err := analyze.Analyze(in, analysisConfig(&in.Meta, 0, 240, 120, nil, dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d results by source %v; %v", len(in.Records), bySource, rep.Notes)
	if len(in.Records) != 480 || len(bySource) != 3 || bySource["shard-0"] != 160 {
		t.Errorf("%d results by source %v: want capacity's 480, 160 from each shard's own address", len(in.Records), bySource)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "merged 3 shards of capacity") {
		t.Errorf("notes %q", rep.Notes)
	}
}

func TestK8sJobUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s-job", "--shards", "3"}, "--profile is required"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml"}, "--shards is required: the number of shards"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "0"}, "--shards 0: want at least 1 shard"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "-1"}, "--shards -1: want at least 1 shard"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "three"}, `--shards "three" is not a whole number: want the number of shards, 1 to 1000`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "1001"}, "--shards 1001: at most 1000 shards"},
		{[]string{"k8s-job", "--profile", "testdata/busy.yaml", "--shards", "2", "--target", "http://api.internal"},
			"shard 0/2 of testdata/busy.yaml at window 1m0s sends up to 1201 requests in one second, above the ceiling --max-rate 1000 every shard runs with: pass -- --max-rate 1201"},
		{[]string{"k8s-job", "--profile", "testdata/busy.yaml", "--shards", "3", "--target", "http://api.internal", "--", "--max-rate=200"}, "shard 0/3 of testdata/busy.yaml at window 1m0s sends up to 801 requests in one second, above the ceiling --max-rate 200"},
		{[]string{"k8s-job", "--profile", "testdata/busy.yaml", "--shards", "3", "--target", "http://api.internal", "--", "--max-duration", "2s"}, "runs for 5s, above the ceiling --max-duration 2s"},
		{[]string{"k8s-job", "--profile", "testdata/busy.yaml", "--shards", "3", "--target", "http://api.internal", "--", "--max-rate", "many"}, `after --: invalid value "many" for flag -max-rate`},
		{[]string{"k8s-job", "--profile", "nope.yaml", "--shards", "3"}, "--profile: open nope.yaml: no such file or directory"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--name", "Big_Name"}, `--name "Big_Name": want at most 40 lowercase letters`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--start-at", "9am"}, `--start-at "9am": want an RFC 3339 instant`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--", "--shard", "1/2"}, "after --: --shard is set by k8s-job itself"},
		{[]string{"k8s-job", "--profile", "testdata/credentials.yaml", "--shards", "3"}, "carries credentials (X-Client-Secret, X-Session-Token, api_key, jwt): a ConfigMap is no place for them"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--target", "http://u:S3CRET@h"}, "carries credentials"},
		{[]string{"k8s-job", "--profile", "testdata/contract-profile.yaml", "--shards", "3"}, "names a contract (../../../examples/contracts/api-key.yaml): a Job carries the profile only"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--node", "n1", "--sources", "198.18.0.1-198.18.0.2"}, "--sources 198.18.0.1-198.18.0.2 holds 2 addresses, fewer than the 3 shards: every pod needs addresses of its own"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--node", "n1", "--sources", "2001:db8:2::/112"}, "--sources: 2001:db8:2::/112 holds 65535 addresses, and attack sends every stream from each of its sources: name at most 4096"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--sources", "198.18.0.0/24"}, "--sources needs --node"},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--namespace", "Load"}, `--namespace "Load": not a valid Kubernetes namespace name`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--claim-size", "lots"}, `--claim-size "lots": want a storage size`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--node", "Node_1"}, `--node "Node_1": not a valid Kubernetes node name`},
		{[]string{"k8s-job", "--profile", "../../profiles/capacity.yaml", "--shards", "3", "--image", "a b"}, `--image "a b": want an image reference`},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" || strings.Contains(stderr, "S3CRET") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// Within every shard's ceiling: the Job is printed.
	for _, args := range [][]string{{"--shards", "3"}, {"--shards", "2", "--", "--max-rate", "1201"}} {
		args = append([]string{"k8s-job", "--profile", "testdata/busy.yaml", "--target", "http://api.internal"}, args...)
		if code, stdout, stderr := runCmd(t, args...); code != exitOK || !strings.Contains(stdout, "kind: Job") {
			t.Errorf("%v: exit %d, %s; want the Job", args, code, stderr)
		}
	}
}

// TestK8sFlagsOfFields holds k8sFlags to the library's fields and to the
// command's flags: every field a *kubernetes.FieldError can name is said
// as a flag k8s-job has.
func TestK8sFlagsOfFields(t *testing.T) {
	t.Parallel()
	_, _, help := runCmd(t, "k8s-job", "--help")
	for _, field := range kubernetes.Fields {
		flag, ok := k8sFlags[field]
		if !ok || !strings.Contains(help, "\n  -"+strings.TrimPrefix(flag, "--")+" ") && !strings.Contains(help, "\n  -"+strings.TrimPrefix(flag, "--")+"\n") {
			t.Errorf("field %s: flag %q (known %v), not among k8s-job's:\n%s", field, flag, ok, help)
		}
	}
}
