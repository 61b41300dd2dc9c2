package kubernetes

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// objects are the manifests decoded into the Kubernetes API types.
type objects struct {
	configMap  *corev1.ConfigMap
	claim      *corev1.PersistentVolumeClaim
	deployment *appsv1.Deployment
	service    *corev1.Service
	job        *batchv1.Job
}

// decode splits the YAML documents and decodes each strictly into the API
// type of its kind, as the API server does with fieldValidation=Strict (the
// default of kubectl apply).
func decode(t *testing.T, manifest []byte) objects {
	t.Helper()
	var o objects
	for i, doc := range bytes.Split(manifest, []byte("\n---\n")) {
		doc = append(doc, '\n') // the split took it
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var into any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			o.configMap = &corev1.ConfigMap{}
			into = o.configMap
		case "v1 PersistentVolumeClaim":
			o.claim = &corev1.PersistentVolumeClaim{}
			into = o.claim
		case "apps/v1 Deployment":
			o.deployment = &appsv1.Deployment{}
			into = o.deployment
		case "v1 Service":
			o.service = &corev1.Service{}
			into = o.service
		case "batch/v1 Job":
			o.job = &batchv1.Job{}
			into = o.job
		default:
			t.Fatalf("document %d: unexpected %s %s", i, head.APIVersion, head.Kind)
		}
		// As the API server decodes: field names match case-sensitively;
		// unknown and repeated fields are errors.
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("document %d (%s): %v", i, head.Kind, err)
		}
		strict, err := json.UnmarshalStrict(js, into, json.DisallowDuplicateFields, json.DisallowUnknownFields)
		if err != nil || len(strict) > 0 {
			t.Fatalf("document %d (%s): %v %v", i, head.Kind, err, strict)
		}
	}
	return o
}

func options() Options {
	return Options{Name: "ratecheck-capacity", ProfileFile: "capacity.yaml",
		Profile: []byte("name: capacity\nstreams: []\n"), Shards: 3, Image: "registry.example.com/ratecheck:v1",
		StartAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Claim: "ratecheck-capacity-results", NewClaim: true, ClaimSize: "1Gi"}
}

// TestManifest: for every combination of options the manifests decode
// strictly into the API types and hold together as the API server and the
// Job controller require: valid names and labels, an Indexed Job of n
// completions run n at a time and never retried, pods that never restart,
// every mount backed by a volume that names an object of the manifest (or
// the existing claim), the shard index taken from the completion index, and
// a Service that selects the target's pods.
func TestManifest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
	}{
		{"defaults", func(*Options) {}},
		{"remote target, existing claim, namespace", func(o *Options) {
			o.Target, o.Claim, o.NewClaim, o.Namespace = "https://api.example.com", "shared-results", false, "load"
		}},
		{"one shard, window, extra args", func(o *Options) {
			o.Shards, o.Window, o.Args = 1, 6*time.Second, []string{"--max-rate", "5000"}
		}},
		{"many shards", func(o *Options) { o.Shards = 50 }},
		{"capacity search", func(o *Options) {
			o.Capacity, o.Name, o.ProfileFile, o.Profile, o.Args = true, "ratecheck-knee", "", nil, []string{"--slo", "p99<=100ms"}
			o.TargetArgs = []string{"--workers", "10", "--service", "20ms"}
		}},
		{"capacity search of a remote target", func(o *Options) {
			o.Capacity, o.Target, o.Window = true, "https://api.example.com", time.Second
		}},
		{"a pool of addresses on one node", func(o *Options) {
			o.Target, o.Sources, o.Node = "https://api.example.com", "2001:db8:2::/112,198.18.0.0/16", "node-7.example"
		}},
		{"capacity search from a pool on one node", func(o *Options) {
			o.Capacity, o.Target, o.Sources, o.Node = true, "https://api.example.com", "2001:db8:2::/80", "node-7"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := options()
			tc.change(&opts)
			var b bytes.Buffer
			if err := Write(&b, opts); err != nil {
				t.Fatal(err)
			}
			o := decode(t, b.Bytes())
			if (o.configMap == nil) != opts.Capacity || o.job == nil || (o.claim != nil) != opts.NewClaim || (o.deployment != nil) != (opts.Target == "") || (o.service != nil) != (opts.Target == "") {
				t.Fatalf("objects %+v for %+v", o, opts)
			}
			checkMeta := func(kind, name, namespace string, labels map[string]string) {
				for _, msg := range validation.IsDNS1123Label(name) {
					t.Errorf("%s name %q: %s", kind, name, msg)
				}
				if namespace != opts.Namespace {
					t.Errorf("%s namespace %q, want %q", kind, namespace, opts.Namespace)
				}
				for k, v := range labels {
					for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
						t.Errorf("%s label %s=%s: %s", kind, k, v, msg)
					}
				}
			}
			if o.configMap != nil {
				checkMeta("ConfigMap", o.configMap.Name, o.configMap.Namespace, o.configMap.Labels)
				if string(o.configMap.Data[opts.ProfileFile]) != string(opts.Profile) {
					t.Errorf("ConfigMap data %v does not hold the profile as %s", o.configMap.Data, opts.ProfileFile)
				}
			}
			if o.claim != nil {
				checkMeta("PersistentVolumeClaim", o.claim.Name, o.claim.Namespace, o.claim.Labels)
				if q := o.claim.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != opts.ClaimSize || !slices.Contains(o.claim.Spec.AccessModes, corev1.ReadWriteMany) {
					t.Errorf("claim requests %v, modes %v", q.String(), o.claim.Spec.AccessModes)
				}
			}
			j := o.job
			checkMeta("Job", j.Name, j.Namespace, j.Labels)
			s := j.Spec
			if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || int(*s.Completions) != opts.Shards ||
				s.Parallelism == nil || int(*s.Parallelism) != opts.Shards || s.BackoffLimit == nil || *s.BackoffLimit != 0 {
				t.Errorf("job spec: mode %v, completions %v, parallelism %v, backoff %v", s.CompletionMode, s.Completions, s.Parallelism, s.BackoffLimit)
			}
			pod := s.Template.Spec
			if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
				t.Fatalf("pod: restart %q, %d containers", pod.RestartPolicy, len(pod.Containers))
			}
			switch {
			case opts.Node != "":
				if len(pod.TopologySpreadConstraints) != 0 || pod.NodeSelector["kubernetes.io/hostname"] != opts.Node {
					t.Errorf("pods spread %v, on nodes %v; want every pod on %s", pod.TopologySpreadConstraints, pod.NodeSelector, opts.Node)
				}
			case !selects(pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels, s.Template.Labels):
				t.Errorf("spread selector %v does not select the shards %v", pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels, s.Template.Labels)
			}
			if pod.HostNetwork != (opts.Sources != "") || (pod.HostNetwork && pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet) {
				t.Errorf("hostNetwork %v, dnsPolicy %q; want the node's network for a pool (%q)", pod.HostNetwork, pod.DNSPolicy, opts.Sources)
			}
			c := pod.Containers[0]
			checkPod("Job", t, pod, o, opts)
			args := strings.Join(c.Args, " ")
			want := "attack --profile /etc/ratecheck/" + opts.ProfileFile
			sources := " --sources own "
			if opts.Sources != "" {
				sources = " --sources " + opts.Sources + " "
			}
			if opts.Capacity {
				want = "capacity --target "
				sources = ""
				if opts.Sources != "" {
					sources = " --sources " + opts.Sources + " --shared-sources"
				}
				if !strings.Contains(args, " --rendezvous /results/"+opts.Name+"/rendezvous ") || (sources == "") != !strings.Contains(args, "--sources") || len(pod.Volumes) != 1 {
					t.Errorf("args %q, volumes %+v: want the rendezvous on the claim, each pod's own address or the pool, no profile", args, pod.Volumes)
				}
				if d := o.deployment; d != nil && !strings.HasSuffix(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), strings.Join(opts.TargetArgs, " ")) {
					t.Errorf("target args %q, want them to end with %q", d.Spec.Template.Spec.Containers[0].Args, opts.TargetArgs)
				}
			}
			if !strings.HasPrefix(args, want) || !strings.Contains(args, sources) || !strings.Contains(args, " --shard $(JOB_COMPLETION_INDEX)/"+strconv.Itoa(opts.Shards)+" ") ||
				!strings.Contains(args, " --start-at 2026-11-30T09:00:00Z ") || !strings.Contains(args, " --out /results/"+opts.Name) {
				t.Errorf("args %q", args)
			}
			if !strings.HasSuffix(args, strings.Join(opts.Args, " ")) {
				t.Errorf("args %q do not end with the extra %q", args, opts.Args)
			}
			if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef == nil ||
				c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("env %+v: want JOB_COMPLETION_INDEX from the completion-index annotation", c.Env)
			}
			if opts.Target == "" {
				d, svc := o.deployment, o.service
				checkMeta("Deployment", d.Name, d.Namespace, d.Labels)
				checkMeta("Service", svc.Name, svc.Namespace, svc.Labels)
				checkPod("Deployment", t, d.Spec.Template.Spec, o, opts)
				if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) || !selects(svc.Spec.Selector, d.Spec.Template.Labels) {
					t.Errorf("selectors %v and %v do not select the target's pods %v", d.Spec.Selector.MatchLabels, svc.Spec.Selector, d.Spec.Template.Labels)
				}
				if !strings.Contains(args, " --target http://"+svc.Name+":"+strconv.Itoa(int(svc.Spec.Ports[0].Port))+" ") ||
					svc.Spec.Ports[0].TargetPort.IntValue() != int(d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort) {
					t.Errorf("the shards attack %q; the Service %s listens on %v for port %v", args, svc.Name, svc.Spec.Ports, d.Spec.Template.Spec.Containers[0].Ports)
				}
			} else if !strings.Contains(args, " --target "+opts.Target+" ") {
				t.Errorf("args %q do not attack %s", args, opts.Target)
			}
		})
	}
}

// checkPod: every container has a name and the image, and every mount is
// backed by a volume whose source is an object of the manifest or the
// existing claim.
func checkPod(kind string, t *testing.T, pod corev1.PodSpec, o objects, opts Options) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name != o.configMap.Name:
			t.Errorf("%s: volume %s names ConfigMap %s, not %s", kind, v.Name, v.ConfigMap.Name, o.configMap.Name)
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != opts.Claim:
			t.Errorf("%s: volume %s names claim %s, not %s", kind, v.Name, v.PersistentVolumeClaim.ClaimName, opts.Claim)
		}
	}
	for _, c := range pod.Containers {
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 || c.Image != opts.Image {
			t.Errorf("%s: container %q (%v), image %q", kind, c.Name, msgs, c.Image)
		}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("%s: mount %s has no volume", kind, m.Name)
			}
		}
	}
}

// selects reports whether selector matches labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// TestManifestGolden pins the manifests a person reads and applies.
func TestManifestGolden(t *testing.T) {
	opts := options()
	opts.Profile, _ = os.ReadFile("../../profiles/capacity.yaml")
	opts.Window = 4 * time.Second
	var b bytes.Buffer
	if err := Write(&b, opts); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "capacity-3.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("manifests differ from %s (go test -update to accept):\n%s", golden, b.String())
	}
}

// TestCapacityManifestGolden pins the manifests of a capacity search
// against the reference target deployed alongside with a worker pool.
func TestCapacityManifestGolden(t *testing.T) {
	opts := options()
	opts.Name, opts.Claim, opts.Capacity, opts.ProfileFile, opts.Profile = "ratecheck-knee", "ratecheck-knee-results", true, "", nil
	opts.Window = time.Second
	opts.TargetArgs = []string{"--workers", "10", "--service", "20ms", "--queue", "1000"}
	opts.Args = []string{"--slo", "p99<=100ms", "--start-rate", "100", "--max-rate", "360"}
	var b bytes.Buffer
	if err := Write(&b, opts); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "knee-3.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("manifests differ from %s (go test -update to accept):\n%s", golden, b.String())
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Name = "Rate_Check" }, `Name "Rate_Check": want at most 40 lowercase letters`},
		{func(o *Options) { o.Name = strings.Repeat("a", 41) }, `Name "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": want at most 40 lowercase letters`},
		{func(o *Options) { o.Namespace = "Load" }, `Namespace "Load": not a valid Kubernetes namespace name`},
		{func(o *Options) { o.Shards = 0 }, `Shards "0": want 1 to 1000`},
		{func(o *Options) { o.Image = "" }, `Image "": want an image reference`},
		{func(o *Options) { o.Claim = "results/x" }, `Claim "results/x": not a valid PersistentVolumeClaim name`},
		{func(o *Options) { o.ProfileFile = "my profile.yaml" }, `profile file name "my profile.yaml" cannot be a ConfigMap key`},
		{func(o *Options) { o.Profile = []byte("name: \xff") }, `the profile is not UTF-8 text`},
		{func(o *Options) { o.Image = "img\n---\nkind: Secret" }, `Image "img\n---\nkind: Secret": want an image reference`},
		{func(o *Options) { o.ClaimSize = "1Gi\nkind: Secret" }, `ClaimSize "1Gi\nkind: Secret": want a storage size`},
		{func(o *Options) { o.Target = "http://h/?token=S3CRET" }, `Target "http://h/": a base URL has no query or fragment`},
		{func(o *Options) { o.Target = "http://h/\u2028x" }, `Target not a base URL such as http://127.0.0.1:8080: it has spaces or control characters`},
		{func(o *Options) { o.Args = []string{"--header", "X: y\n---\nkind: Secret"} }, `extra argument "X: y\n---\nkind: Secret": want at most 1024 characters`},
		{func(o *Options) { o.Args = []string{"\u202e"} }, `extra argument "\u202e"`},
		{func(o *Options) { o.Args = make([]string, 65) }, `65 extra arguments: want at most 64`},
		{func(o *Options) { o.TargetArgs = []string{"--queue", "1\n---\nkind: Secret"} }, `extra argument "1\n---\nkind: Secret"`},
		{func(o *Options) { o.Capacity, o.ProfileFile, o.Image = true, "", "" }, `Image "": want an image reference`},
		{func(o *Options) { o.Sources = "2001:db8:2::/112" }, `Sources needs Node: a pool of addresses`},
		{func(o *Options) { o.Sources, o.Node = "198.18.0.0/16\nkind: Secret", "n1" }, `Sources "198.18.0.0/16\nkind: Secret": want addresses`},
		{func(o *Options) { o.Node = "Node_1" }, `Node "Node_1": not a valid Kubernetes node name`},
	} {
		opts := options()
		tc.change(&opts)
		err := Write(new(bytes.Buffer), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", opts, err, tc.want)
			continue
		}
		// A field's error is typed, so the command that set it can name
		// its flag; the profile's and the arguments' are not a field's.
		var fe *FieldError
		field, _, _ := strings.Cut(tc.want, " ")
		if isField := slices.Contains(Fields, field); errors.As(err, &fe) != isField || isField && fe.Field != field {
			t.Errorf("%q: error %#v, want a *FieldError of %s: %v", tc.want, err, field, isField)
		}
	}
	for profile, want := range map[string]string{"capacity": "ratecheck-capacity", "REST Limit!": "ratecheck-rest-limit", strings.Repeat("x", 60): "ratecheck-" + strings.Repeat("x", 30)} {
		if got := DefaultName(profile); got != want {
			t.Errorf("DefaultName(%q) = %q, want %q", profile, got, want)
		}
	}
}

// expand does to a container argument what the kubelet does, as the
// Container.Args field of the API documents it: "Variable references
// $(VAR_NAME) are expanded using the container's environment. If a variable
// cannot be resolved, the reference in the input string will be unchanged.
// Double $$ are reduced to a single $, which allows for escaping the
// $(VAR_NAME) syntax".
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := env[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// TestArgsReachTheShardAsWritten: what the user passes after -- reaches
// every shard's ratecheck as written, whatever the pod's environment holds,
// while the shard index is still the kubelet's to fill in.
func TestArgsReachTheShardAsWritten(t *testing.T) {
	t.Parallel()
	opts := options()
	opts.Args = []string{"--header", "X-Key: $(SECRET)", "--header", "X-Cost: $$5 $ (x) $(", "--label", "$(JOB_COMPLETION_INDEX)"}
	var b bytes.Buffer
	if err := Write(&b, opts); err != nil {
		t.Fatal(err)
	}
	args := decode(t, b.Bytes()).job.Spec.Template.Spec.Containers[0].Args
	env := map[string]string{"JOB_COMPLETION_INDEX": "2", "SECRET": "hunter2"}
	var got []string
	for _, a := range args {
		got = append(got, expand(a, env))
	}
	if tail := got[len(got)-len(opts.Args):]; !slices.Equal(tail, opts.Args) {
		t.Errorf("the shard receives %q, want %q", tail, opts.Args)
	}
	if i := slices.Index(got, "--shard"); i < 0 || got[i+1] != "2/3" {
		t.Errorf("shard argument %q: want the completion index filled in (2/3)", got)
	}
}
