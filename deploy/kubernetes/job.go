package kubernetes

import (
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/connectbyjbrh/ratecheck/redact"
)

// Options describe the Job.
type Options struct {
	// Name names the Job and prefixes every other object (default
	// ratecheck-<profile name>).
	Name string
	// Namespace, when set, is written into every object.
	Namespace string
	// ProfileFile is the profile's file name and Profile its text (UTF-8),
	// shipped in a ConfigMap.
	ProfileFile string
	Profile     []byte
	// Shards is the number of pods (n).
	Shards int
	// Image is the container image holding the ratecheck binary on PATH.
	Image string
	// Target is the base URL attacked. Empty: the reference target is
	// deployed alongside (a Deployment and a Service) and attacked.
	Target string
	// Window, when set, is passed to attack (and to the reference target).
	Window time.Duration
	// StartAt is the instant every shard starts at.
	StartAt time.Time
	// Claim is the PersistentVolumeClaim the run folders are written to;
	// NewClaim adds it to the manifests (ReadWriteMany, ClaimSize).
	Claim     string
	NewClaim  bool
	ClaimSize string
	// Args are extra arguments for every shard's command, such as
	// --max-rate 5000.
	Args []string
	// Capacity makes every pod a shard of the knee search ("ratecheck
	// capacity --shard i/n"), meeting the others in rendezvousDir on the
	// claim, instead of a shard of an attack: no profile (ProfileFile and
	// Profile are unused, and no ConfigMap is written); Args carry the
	// search's flags.
	Capacity bool
	// TargetArgs are extra arguments of the deployed reference target's
	// serve, such as a worker pool of known capacity for a search.
	TargetArgs []string
	// Sources, when set, is a pool of source addresses (addresses, ranges
	// and prefixes, comma-separated) that the pods share, each sending
	// from its own share of it: an attack's pods split every stream's
	// sources by source, a search's pods take every n-th address of the
	// pool from the i-th (capacity --shared-sources). Empty: each pod sends
	// from its own address. It needs Node: the pool is routed to a node,
	// so the pods run there, in the node's network (hostNetwork).
	Sources string
	// Node, when set, is the node every pod runs on (nodeSelector
	// kubernetes.io/hostname), instead of the pods spread over nodes.
	Node string
}

// rendezvousDir is the folder, under the Job's folder on the claim, where
// the shards of a capacity search meet after every step.
const rendezvousDir = "rendezvous"

// Limits on the free-form options: each is written into the manifests by
// the YAML encoder, so none can add an object, but a line break or a
// control character in one is a mistake (or an attack) to refuse, not to
// ship to a cluster.
const (
	maxArgs   = 64
	maxArgLen = 1024
)

// targetPort is the port the reference target listens on when deployed.
const targetPort = 8080

// resultsDir is where the shared volume is mounted in a shard.
const resultsDir = "/results"

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	configKey = regexp.MustCompile(`^[-._a-zA-Z0-9]{1,253}$`)
	nodeName  = regexp.MustCompile(`^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`)
)

// DefaultName is the Job name for a profile: ratecheck-<name>, lowercased,
// with anything a Kubernetes name cannot hold replaced by '-'.
func DefaultName(profile string) string {
	b := []byte(strings.ToLower("ratecheck-" + profile))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), 40)]), "-")
}

// FieldError is a bad value of one of Options' fields: the field's name
// (one of Fields), its value and what is wanted of it; or, where the
// field needs another set beside it, that one's name (Needs); or, for a
// value that must not be shown as given (a target URL may carry
// credentials), the error that says what is wrong with it (Err). It
// names no flag: the command that set the field says which of its flags
// did.
type FieldError struct {
	Field, Value, Want, Needs string
	Err                       error
}

func (e *FieldError) Error() string { return e.Named(func(field string) string { return field }) }

// Named is the error's text with each field called what name returns for
// it: a command gives the flag that set the field.
func (e *FieldError) Named(name func(field string) string) string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("%s %v", name(e.Field), e.Err)
	case e.Needs != "":
		return fmt.Sprintf("%s needs %s: %s", name(e.Field), name(e.Needs), e.Want)
	}
	return fmt.Sprintf("%s %s: %s", name(e.Field), quote(e.Value), e.Want)
}

// Unwrap returns the error that says what is wrong with a value not shown.
func (e *FieldError) Unwrap() error { return e.Err }

// Fields are the names a FieldError gives, one per field of Options it
// checks.
var Fields = []string{"Name", "Namespace", "Shards", "Image", "Claim", "ClaimSize", "Sources", "Node", "Target"}

// Check says what is wrong with o: a *FieldError for a bad field, a plain
// error for the profile, the start instant and the extra arguments.
func (o Options) Check() error {
	switch {
	case len(o.Name) > 40 || !dnsLabel.MatchString(o.Name):
		return &FieldError{Field: "Name", Value: o.Name, Want: "want at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit (it prefixes the names of the Job's objects)"}
	case o.Namespace != "" && (len(o.Namespace) > 63 || !dnsLabel.MatchString(o.Namespace)):
		return &FieldError{Field: "Namespace", Value: o.Namespace, Want: "not a valid Kubernetes namespace name"}
	case o.Shards < 1 || o.Shards > 1000:
		return &FieldError{Field: "Shards", Value: strconv.Itoa(o.Shards), Want: "want 1 to 1000"}
	case o.Image == "" || strings.ContainsAny(o.Image, " \t\n"):
		return &FieldError{Field: "Image", Value: o.Image, Want: "want an image reference such as registry.example.com/ratecheck:v1"}
	case len(o.Claim) > 63 || !dnsLabel.MatchString(o.Claim):
		return &FieldError{Field: "Claim", Value: o.Claim, Want: "not a valid PersistentVolumeClaim name"}
	case !o.Capacity && !configKey.MatchString(o.ProfileFile):
		return fmt.Errorf("profile file name %q cannot be a ConfigMap key: rename it to letters, digits, '-', '_' and '.'", o.ProfileFile)
	case !o.Capacity && !utf8.Valid(o.Profile):
		return fmt.Errorf("the profile is not UTF-8 text: a ConfigMap's data cannot hold it")
	case o.StartAt.IsZero():
		return fmt.Errorf("no start instant")
	case !plain(o.Image, 512):
		return &FieldError{Field: "Image", Value: o.Image, Want: "want an image reference such as registry.example.com/ratecheck:v1"}
	case o.NewClaim && !quantity.MatchString(o.ClaimSize):
		return &FieldError{Field: "ClaimSize", Value: o.ClaimSize, Want: "want a storage size such as 1Gi or 500Mi"}
	case len(o.Args) > maxArgs || len(o.TargetArgs) > maxArgs:
		return fmt.Errorf("%d extra arguments: want at most %d", max(len(o.Args), len(o.TargetArgs)), maxArgs)
	}
	switch {
	case o.Sources != "" && o.Node == "":
		return &FieldError{Field: "Sources", Value: o.Sources, Needs: "Node", Want: "a pool of addresses is routed to one node, and the pods that share it run there, in its network"}
	case o.Sources != "" && !plain(o.Sources, 16384):
		return &FieldError{Field: "Sources", Value: o.Sources, Want: "want addresses, ranges and prefixes, comma-separated, without spaces"}
	case o.Node != "" && (len(o.Node) > 253 || !nodeName.MatchString(o.Node)):
		return &FieldError{Field: "Node", Value: o.Node, Want: "not a valid Kubernetes node name"}
	}
	if o.Target != "" {
		if err := redact.CheckBaseURL(o.Target); err != nil {
			return &FieldError{Field: "Target", Err: err}
		}
		if !plain(o.Target, 2048) {
			return &FieldError{Field: "Target", Err: errors.New("not a base URL such as http://127.0.0.1:8080: it has spaces or control characters")}
		}
	}
	for _, a := range append(o.Args[:len(o.Args):len(o.Args)], o.TargetArgs...) {
		if !printable(a, maxArgLen) {
			return fmt.Errorf("extra argument %s: want at most %d characters, none of them a line break or control character", quote(a), maxArgLen)
		}
	}
	return nil
}

// quantity is a Kubernetes resource quantity such as 1Gi, 500M or 1e9.
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE]|[eE][0-9]+)?$`)

// printable reports whether s is at most max bytes of UTF-8 without line
// breaks (YAML's include U+0085, U+2028 and U+2029), control or format
// characters (bidi overrides among them).
func printable(s string, max int) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return false
		}
	}
	return true
}

// plain is printable, not empty, and without spaces.
func plain(s string, max int) bool {
	return s != "" && printable(s, max) && !strings.ContainsFunc(s, unicode.IsSpace)
}

// quote quotes s for an error message, every control and non-ASCII
// character escaped, cut to 80 bytes.
func quote(s string) string {
	if len(s) > 80 {
		return strconv.QuoteToASCII(s[:80]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// Write writes the manifests, as YAML documents, to w: the profile's
// ConfigMap (not for a capacity search), the claim if new, the reference
// target if no Target is set, and the Job.
func Write(w io.Writer, o Options) error {
	if err := o.Check(); err != nil {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/name": "ratecheck", "app.kubernetes.io/instance": o.Name}
	meta := func(name, component string) objectMeta {
		l := map[string]string{"app.kubernetes.io/component": component}
		for k, v := range labels {
			l[k] = v
		}
		return objectMeta{Name: name, Namespace: o.Namespace, Labels: l}
	}
	var docs []any
	cm := "" // no profile for a capacity search
	if !o.Capacity {
		cm = o.Name + "-profile"
		docs = append(docs, configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta(cm, "profile"),
			Data: map[string]string{o.ProfileFile: string(o.Profile)}})
	}
	if o.NewClaim {
		docs = append(docs, claim{APIVersion: "v1", Kind: "PersistentVolumeClaim", Metadata: meta(o.Claim, "results"),
			Spec: claimSpec{AccessModes: []string{"ReadWriteMany"}, Resources: claimResources{Requests: map[string]string{"storage": o.ClaimSize}}}})
	}
	target, objs := targetObjects(o, meta)
	docs = append(docs, objs...)
	docs = append(docs, shardJob(o, meta(o.Name, "shard"), target, cm))

	// Every value goes through the YAML encoder, the header comment too:
	// it holds only numbers and an instant, never a name, a target or an
	// argument (those are in the objects, quoted as the encoder sees fit).
	what := "shards"
	if o.Capacity {
		what = "shards of a capacity search"
	}
	header := fmt.Sprintf("ratecheck k8s-job: %d %s, starting at %s.\nApply before then: kubectl apply -f THIS_FILE. Merge: see deploy/kubernetes/README.md.",
		o.Shards, what, o.StartAt.UTC().Format(time.RFC3339))
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	for i, d := range docs {
		var n yaml.Node
		if err := n.Encode(d); err != nil {
			return err
		}
		if i == 0 {
			n.HeadComment = header
		}
		if err := enc.Encode(&n); err != nil {
			return err
		}
	}
	return enc.Close()
}

// targetObjects returns the target the shards attack and the objects that
// serve it: o.Target itself and none, or a Deployment and a Service of the
// reference target when o.Target is empty.
func targetObjects(o Options, meta func(name, component string) objectMeta) (string, []any) {
	var docs []any
	target := o.Target
	if target == "" {
		svc := o.Name + "-target"
		target = fmt.Sprintf("http://%s:%d", svc, targetPort)
		args := []string{"serve", "--addr", fmt.Sprintf(":%d", targetPort)}
		if o.Window > 0 {
			args = append(args, "--window", o.Window.String())
		}
		args = append(args, o.TargetArgs...)
		tm := meta(svc, "target")
		docs = append(docs,
			deployment{APIVersion: "apps/v1", Kind: "Deployment", Metadata: tm, Spec: deploymentSpec{
				Replicas: 1, Selector: selector{MatchLabels: tm.Labels},
				Template: podTemplate{Metadata: objectMeta{Labels: tm.Labels}, Spec: podSpec{
					SecurityContext: &podSecurity{RunAsNonRoot: true, RunAsUser: 65532},
					Containers: []container{{Name: "target", Image: o.Image, Command: []string{"ratecheck"}, Args: args,
						Ports:          []containerPort{{Name: "http", ContainerPort: targetPort}},
						ReadinessProbe: &probe{TCPSocket: tcpSocket{Port: targetPort}}}}}}}},
			service{APIVersion: "v1", Kind: "Service", Metadata: tm, Spec: serviceSpec{Selector: tm.Labels,
				Ports: []servicePort{{Name: "http", Port: targetPort, TargetPort: targetPort}}}})
	}
	return target, docs
}

// shardArgs are the arguments of pod $(JOB_COMPLETION_INDEX)'s ratecheck:
// one shard of the attack, or of the capacity search, on target.
func shardArgs(o Options, target string) []string {
	shard := fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", o.Shards)
	at := o.StartAt.UTC().Format(time.RFC3339Nano)
	out := path.Join(resultsDir, o.Name)
	sources := "own"
	if o.Sources != "" {
		sources = kubeletLiteral(o.Sources)
	}
	args := []string{"attack", "--profile", path.Join("/etc/ratecheck", o.ProfileFile), "--target", kubeletLiteral(target),
		"--shard", shard, "--start-at", at, "--sources", sources, "--out", out}
	if o.Capacity {
		args = []string{"capacity", "--target", kubeletLiteral(target), "--shard", shard, "--start-at", at,
			"--rendezvous", path.Join(out, rendezvousDir), "--out", out}
		if o.Sources != "" {
			args = append(args, "--sources", sources, "--shared-sources")
		}
	}
	if o.Window > 0 {
		args = append(args, "--window", o.Window.String())
	}
	for _, a := range o.Args {
		args = append(args, kubeletLiteral(a))
	}
	return args
}

// shardJob is the Indexed Job of o.Shards pods, each one shard of the
// attack (with the profile of ConfigMap cm) or of the capacity search
// (cm empty) on target.
func shardJob(o Options, jm objectMeta, target, cm string) job {
	mounts := []volumeMount{{Name: "results", MountPath: resultsDir}}
	volumes := []volume{{Name: "results", PersistentVolumeClaim: &claimVolume{ClaimName: o.Claim}}}
	name := "capacity"
	if cm != "" {
		name = "attack"
		mounts = append([]volumeMount{{Name: "profile", MountPath: "/etc/ratecheck", ReadOnly: true}}, mounts...)
		volumes = append([]volume{{Name: "profile", ConfigMap: &configMapVolume{Name: cm}}}, volumes...)
	}
	zero := 0
	// Spread the shards over nodes: more machines, more addresses; or
	// run them on the node a pool of addresses is routed to, in its
	// network.
	spreads := []spread{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
		WhenUnsatisfiable: "ScheduleAnyway", LabelSelector: selector{MatchLabels: jm.Labels}}}
	var nodeSelector map[string]string
	var dnsPolicy string
	if o.Node != "" {
		spreads, nodeSelector = nil, map[string]string{"kubernetes.io/hostname": o.Node}
	}
	if o.Sources != "" {
		dnsPolicy = "ClusterFirstWithHostNet" // the cluster's names, from the node's network
	}
	return job{APIVersion: "batch/v1", Kind: "Job", Metadata: jm, Spec: jobSpec{
		CompletionMode: "Indexed", Completions: o.Shards, Parallelism: o.Shards,
		// A shard that failed is not run again: a retry would start
		// after the agreed instant and send its share twice.
		BackoffLimit: &zero,
		Template: podTemplate{Metadata: objectMeta{Labels: jm.Labels}, Spec: podSpec{
			RestartPolicy:             "Never",
			SecurityContext:           &podSecurity{RunAsNonRoot: true, RunAsUser: 65532, FSGroup: 65532},
			TopologySpreadConstraints: spreads, NodeSelector: nodeSelector,
			HostNetwork: o.Sources != "", DNSPolicy: dnsPolicy,
			Containers: []container{{Name: name, Image: o.Image, Command: []string{"ratecheck"}, Args: shardArgs(o, target),
				Env: []envVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &envSource{FieldRef: fieldRef{
					FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
				VolumeMounts: mounts}},
			Volumes: volumes}}}}
}

// kubeletLiteral escapes s for a container's args, where the kubelet
// expands $(VAR) and reduces $$ to $: every $ is doubled, so what the
// container receives is s itself, never a variable's value.
func kubeletLiteral(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// The API fields the manifests use, named as in the Kubernetes API.

type objectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type claim struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       claimSpec  `yaml:"spec"`
}

type claimSpec struct {
	AccessModes []string       `yaml:"accessModes"`
	Resources   claimResources `yaml:"resources"`
}

type claimResources struct {
	Requests map[string]string `yaml:"requests"`
}

type deployment struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   objectMeta     `yaml:"metadata"`
	Spec       deploymentSpec `yaml:"spec"`
}

type deploymentSpec struct {
	Replicas int         `yaml:"replicas"`
	Selector selector    `yaml:"selector"`
	Template podTemplate `yaml:"template"`
}

type service struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   objectMeta  `yaml:"metadata"`
	Spec       serviceSpec `yaml:"spec"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []servicePort     `yaml:"ports"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort int    `yaml:"targetPort"`
}

type job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       jobSpec    `yaml:"spec"`
}

type jobSpec struct {
	CompletionMode string      `yaml:"completionMode"`
	Completions    int         `yaml:"completions"`
	Parallelism    int         `yaml:"parallelism"`
	BackoffLimit   *int        `yaml:"backoffLimit"`
	Template       podTemplate `yaml:"template"`
}

type selector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy             string            `yaml:"restartPolicy,omitempty"`
	NodeSelector              map[string]string `yaml:"nodeSelector,omitempty"`
	HostNetwork               bool              `yaml:"hostNetwork,omitempty"`
	DNSPolicy                 string            `yaml:"dnsPolicy,omitempty"`
	SecurityContext           *podSecurity      `yaml:"securityContext,omitempty"`
	TopologySpreadConstraints []spread          `yaml:"topologySpreadConstraints,omitempty"`
	Containers                []container       `yaml:"containers"`
	Volumes                   []volume          `yaml:"volumes,omitempty"`
}

type podSecurity struct {
	RunAsNonRoot bool `yaml:"runAsNonRoot"`
	RunAsUser    int  `yaml:"runAsUser,omitempty"`
	FSGroup      int  `yaml:"fsGroup,omitempty"`
}

type spread struct {
	MaxSkew           int      `yaml:"maxSkew"`
	TopologyKey       string   `yaml:"topologyKey"`
	WhenUnsatisfiable string   `yaml:"whenUnsatisfiable"`
	LabelSelector     selector `yaml:"labelSelector"`
}

type container struct {
	Name           string          `yaml:"name"`
	Image          string          `yaml:"image"`
	Command        []string        `yaml:"command"`
	Args           []string        `yaml:"args"`
	Env            []envVar        `yaml:"env,omitempty"`
	Ports          []containerPort `yaml:"ports,omitempty"`
	ReadinessProbe *probe          `yaml:"readinessProbe,omitempty"`
	VolumeMounts   []volumeMount   `yaml:"volumeMounts,omitempty"`
}

type envVar struct {
	Name      string     `yaml:"name"`
	ValueFrom *envSource `yaml:"valueFrom,omitempty"`
}

type envSource struct {
	FieldRef fieldRef `yaml:"fieldRef"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

// probe is a TCP probe: an HTTP one would spend the kubelet's budget.
type probe struct {
	TCPSocket tcpSocket `yaml:"tcpSocket"`
}

type tcpSocket struct {
	Port int `yaml:"port"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly,omitempty"`
}

type volume struct {
	Name                  string           `yaml:"name"`
	ConfigMap             *configMapVolume `yaml:"configMap,omitempty"`
	PersistentVolumeClaim *claimVolume     `yaml:"persistentVolumeClaim,omitempty"`
}

type configMapVolume struct {
	Name string `yaml:"name"`
}

type claimVolume struct {
	ClaimName string `yaml:"claimName"`
}
