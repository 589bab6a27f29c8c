package main

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// validateSet checks what holds the resources of one kustomization together: each Service
// selects the pods of a workload of the set, each Secret or ConfigMap a pod mounts (other than
// the Secrets made with kubectl beforehand, named in external) is in the set under that name,
// and stormark's agents are as many as its coordinator waits for.
func validateSet(objects []object) []string {
	var problems []string
	var pods []*corev1.PodTemplateSpec
	var jobs []*batchv1.Job
	configMaps := map[string]bool{}
	for _, o := range objects {
		switch v := o.value.(type) {
		case *batchv1.Job:
			pods = append(pods, &v.Spec.Template)
			jobs = append(jobs, v)
		case *corev1.ConfigMap:
			configMaps[v.Name] = true
		}
	}
	for _, o := range objects {
		s, ok := o.value.(*corev1.Service)
		if !ok || len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		found := false
		for _, p := range pods {
			found = found || sel.Matches(labels.Set(p.Labels))
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: its selector %s matches no pod template of the set", o, sel))
		}
	}
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.ConfigMap != nil && !configMaps[v.ConfigMap.Name] {
				problems = append(problems, fmt.Sprintf("volume %s: ConfigMap %s is not in the set", v.Name, v.ConfigMap.Name))
			}
		}
	}
	// stormark: the agents Job's completions and parallelism, and the coordinator's AGENTS.
	var agents, coordinator *batchv1.Job
	for _, j := range jobs {
		switch j.Spec.Template.Labels["app.kubernetes.io/component"] {
		case "agent":
			agents = j
		case "coordinator":
			coordinator = j
		}
	}
	if agents == nil || coordinator == nil {
		return append(problems, "stormark: expected an agents Job and a coordinator Job (app.kubernetes.io/component agent and coordinator)")
	}
	n := func(p *int32) string {
		if p == nil {
			return "unset"
		}
		return strconv.Itoa(int(*p))
	}
	if n(agents.Spec.Completions) != n(agents.Spec.Parallelism) {
		problems = append(problems, fmt.Sprintf("stormark: Job %s: completions %s and parallelism %s differ: every agent must run at once", agents.Name, n(agents.Spec.Completions), n(agents.Spec.Parallelism)))
	}
	waits := ""
	for _, c := range coordinator.Spec.Template.Spec.InitContainers {
		for _, e := range c.Env {
			if e.Name == "AGENTS" {
				waits = e.Value
			}
		}
	}
	if waits != n(agents.Spec.Completions) {
		problems = append(problems, fmt.Sprintf("stormark: Job %s waits for AGENTS=%q agents, Job %s runs %s", coordinator.Name, waits, agents.Name, n(agents.Spec.Completions)))
	}
	return problems
}
