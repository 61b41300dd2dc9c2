package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// object is what kubectl apply would create from one document.
type object struct{ APIVersion, Kind, Namespace, Name string }

// applied splits manifest into documents as kubectl apply -f does
// (apimachinery's YAML reader: a line starting with "---" ends a
// document; an empty document is skipped) and returns the object each
// creates, with every document as JSON.
func applied(t *testing.T, manifest []byte) ([]object, []map[string]any) {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var objs []object
	var docs []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, docs
		}
		if err != nil {
			t.Fatalf("kubectl would refuse the manifest: %v\n%s", err, manifest)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("document %d: %v\n%s", len(objs), err, doc)
		}
		if m == nil {
			continue // comments only: kubectl skips it
		}
		meta, _ := m["metadata"].(map[string]any)
		str := func(v any) string { s, _ := v.(string); return s }
		objs = append(objs, object{str(m["apiVersion"]), str(m["kind"]), str(meta["namespace"]), str(meta["name"])})
		docs = append(docs, m)
	}
}

// FuzzWrite: whatever the profile's name and text, the target, the extra
// arguments, the image and the claim size, Write either refuses the
// options (and writes nothing) or writes manifests that kubectl splits into
// exactly the objects meant, of the kinds and names meant, in which every
// value reads back as it was given.
func FuzzWrite(f *testing.F) {
	f.Add("capacity", []byte("name: capacity\nstreams: []\n"), "", "--max-rate", "5000", "registry.example.com/ratecheck:v1", "1Gi", true)
	f.Add("x\napiVersion: v1\nkind: Secret\nmetadata: {name: pwned}\n---\n#", []byte("name: \"x\\n---\"\n---\nkind: Secret\n"),
		"http://h:1/\n---\nkind: Secret", "--header", "X: y\n---\nkind: Secret\nmetadata: {name: pwned}", "img\n---\nkind: Secret", "1Gi\n---", false)
	f.Add("p", []byte("name: p\n"), "", "--header", "X: y\n---\nkind: Secret\nmetadata: {name: pwned}", "img", "1Gi", true)
	f.Add("p", []byte("a: |\n  x\n---\nkind: Secret\n"), "https://api.example.com/v2", "--timeout", "2s # ---", "ratecheck:0.1.0-dev", "500Mi", true)
	f.Add("p", []byte("\u2028---\u0085kind: Secret\r---\rkind: Secret"), "http://h\u2028/", "\u202e", "\x00", "img\u0085x", "1e9", true)
	f.Fuzz(func(t *testing.T, profileName string, profile []byte, target, arg1, arg2, image, claimSize string, newClaim bool) {
		o := options()
		o.Name = DefaultName(profileName)
		o.Profile, o.Target, o.Args, o.Image, o.ClaimSize, o.NewClaim = profile, target, []string{arg1, arg2}, image, claimSize, newClaim
		if !newClaim {
			o.Claim = "shared-results"
		}
		o.Window = 4 * time.Second
		var b bytes.Buffer
		if err := Write(&b, o); err != nil {
			if cerr := o.Check(); cerr == nil || cerr.Error() != err.Error() || b.Len() > 0 {
				t.Fatalf("Write: %v; Check: %v; wrote %d bytes", err, cerr, b.Len())
			}
			return
		}
		objs, docs := applied(t, b.Bytes())
		want := []object{{"v1", "ConfigMap", "", o.Name + "-profile"}}
		if newClaim {
			want = append(want, object{"v1", "PersistentVolumeClaim", "", o.Claim})
		}
		if target == "" {
			want = append(want, object{"apps/v1", "Deployment", "", o.Name + "-target"}, object{"v1", "Service", "", o.Name + "-target"})
		}
		want = append(want, object{"batch/v1", "Job", "", o.Name})
		if diff := cmp.Diff(want, objs); diff != "" {
			t.Fatalf("objects (-want +got):\n%s\nmanifest:\n%s", diff, b.Bytes())
		}
		// Every value reads back as given.
		data, _ := docs[0]["data"].(map[string]any)
		if got, _ := data[o.ProfileFile].(string); got != string(profile) || len(data) != 1 {
			t.Fatalf("ConfigMap data %q, want the profile %q", data, profile)
		}
		spec, _ := docs[len(docs)-1]["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		pod, _ := tmpl["spec"].(map[string]any)
		containers, _ := pod["containers"].([]any)
		if len(containers) != 1 {
			t.Fatalf("Job containers %v", containers)
		}
		c, _ := containers[0].(map[string]any)
		var args []string
		for _, a := range c["args"].([]any) {
			args = append(args, a.(string))
		}
		wantTarget := target
		if target == "" {
			wantTarget = "http://" + o.Name + "-target:" + strconv.Itoa(targetPort)
		}
		i := slices.Index(args, "--target")
		if c["image"] != image || i < 0 || i+1 >= len(args) || args[i+1] != wantTarget || !slices.Equal(args[len(args)-2:], []string{arg1, arg2}) {
			t.Fatalf("Job container image %q args %q; want image %q, target %q, ending with %q", c["image"], args, image, wantTarget, []string{arg1, arg2})
		}
		// And the API types take every document strictly.
		decode(t, b.Bytes())
	})
}
