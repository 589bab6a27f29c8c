// Command validate checks stormark's Kubernetes manifests offline, against the Kubernetes
// API's own Go types (k8s.io/api) and the parts of its validation that live in
// k8s.io/apimachinery, where no API server or published schema can be reached:
//
//	go run . [-print] DIR_OR_FILE...
//
// A directory holding kustomization.yaml is built with kustomize's own library (what
// `kubectl apply -k` runs) and every resource it makes is checked; a file is checked document
// by document. Each document is decoded strictly into its kind's type: an unknown field, a
// value of the wrong type or a field given twice is refused, as the API server's strict field
// validation refuses them. Then the object's metadata is validated by apimachinery's
// ValidateObjectMeta (names, labels, annotations), and pod templates by the rules of the API
// server's validation that a manifest can break (one source per volume, mounts naming a
// volume, names of containers, ports and variables, fields the downward API serves, a Job's
// restart policy and completions). Last, what holds a stormark deployment together: a Service
// selects pods of the set, Secrets and ConfigMaps of the set are found under the names the
// pods use, and the agents' count agrees with what the coordinator waits for.
//
// With -print, the documents checked are printed too (what `kubectl kustomize` prints).
//
// Exit status 0 when everything passed, 1 with one line per problem otherwise, 2 for a usage
// mistake.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// object is one decoded document: its kind, name and typed value.
type object struct {
	source string
	kind   string
	meta   *metav1.ObjectMeta
	value  any
}

func (o object) String() string { return fmt.Sprintf("%s: %s/%s", o.source, o.kind, o.meta.Name) }

// newObject returns an empty value of the type of apiVersion and kind, with its metadata.
func newObject(apiVersion, kind string) (any, *metav1.ObjectMeta, bool) {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		o := &corev1.Namespace{}
		return o, &o.ObjectMeta, true
	case "v1 Service":
		o := &corev1.Service{}
		return o, &o.ObjectMeta, true
	case "v1 Pod":
		o := &corev1.Pod{}
		return o, &o.ObjectMeta, true
	case "v1 Secret":
		o := &corev1.Secret{}
		return o, &o.ObjectMeta, true
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		return o, &o.ObjectMeta, true
	case "v1 PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		return o, &o.ObjectMeta, true
	case "batch/v1 Job":
		o := &batchv1.Job{}
		return o, &o.ObjectMeta, true
	case "apps/v1 DaemonSet":
		o := &appsv1.DaemonSet{}
		return o, &o.ObjectMeta, true
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		return o, &o.ObjectMeta, true
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		return o, &o.ObjectMeta, true
	}
	return nil, nil, false
}

// documents reads the YAML documents of a file, or of what kustomize builds from a directory.
func documents(path string) ([][]byte, bool, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, false, err
		}
		return split(data)
	}
	if _, err := os.Stat(filepath.Join(path, "kustomization.yaml")); err != nil {
		return nil, false, fmt.Errorf("%s: a directory without kustomization.yaml", path)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		return nil, true, fmt.Errorf("kustomize build: %w", err)
	}
	var docs [][]byte
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, true, err
		}
		docs = append(docs, y)
	}
	return docs, true, nil
}

func split(data []byte) ([][]byte, bool, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(d []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(d, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// check validates every object of one file or kustomization and returns the problems.
func check(path string, print bool) []string {
	docs, built, err := documents(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	if print {
		for _, d := range docs {
			fmt.Printf("---\n%s", d)
		}
	}
	var problems []string
	var objects []object
	for i, d := range docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		where := fmt.Sprintf("%s (document %d)", path, i+1)
		if err := yaml.Unmarshal(d, &head); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		value, meta, ok := newObject(head.APIVersion, head.Kind)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s %q: not a kind this validator knows", where, head.APIVersion, head.Kind))
			continue
		}
		if err := yaml.UnmarshalStrict(d, value); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", where, head.Kind, err))
			continue
		}
		o := object{source: path, kind: head.Kind, meta: meta, value: value}
		// Namespaced kinds need a namespace once kustomize has set it; a lone file may leave
		// it to `kubectl -n`.
		namespaced := head.Kind != "Namespace"
		nameFn := apivalidation.NameIsDNSSubdomain
		if head.Kind == "Service" || head.Kind == "Namespace" {
			nameFn = apivalidation.NameIsDNS1035Label
		}
		for _, e := range apivalidation.ValidateObjectMeta(meta, namespaced && (built || meta.Namespace != ""), nameFn, field.NewPath("metadata")) {
			problems = append(problems, fmt.Sprintf("%s: %v", o, e))
		}
		for _, e := range validateObject(value) {
			problems = append(problems, fmt.Sprintf("%s: %v", o, e))
		}
		objects = append(objects, o)
	}
	if built {
		for _, e := range validateSet(objects) {
			problems = append(problems, fmt.Sprintf("%s: %s", path, e))
		}
	}
	return problems
}

func main() {
	args := os.Args[1:]
	print := len(args) > 0 && args[0] == "-print"
	if print {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: validate [-print] DIR_OR_FILE... (a kustomization's directory, or manifests)")
		os.Exit(2)
	}
	var problems []string
	for _, p := range args {
		problems = append(problems, check(p, print)...)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d problems\n", len(problems))
		os.Exit(1)
	}
	fmt.Printf("valid: %s\n", strings.Join(args, " "))
}

// oneSource counts the volume sources set in v (the API allows exactly one).
func oneSource(v corev1.VolumeSource) int {
	n := 0
	r := reflect.ValueOf(v)
	for i := 0; i < r.NumField(); i++ {
		if !r.Field(i).IsNil() {
			n++
		}
	}
	return n
}
