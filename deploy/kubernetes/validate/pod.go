package main

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateObject applies the API server's rules that a manifest can break to the pod template
// of a workload, and a Job's own.
func validateObject(value any) field.ErrorList {
	var errs field.ErrorList
	switch o := value.(type) {
	case *batchv1.Job:
		spec := field.NewPath("spec")
		if o.Spec.CompletionMode != nil {
			switch *o.Spec.CompletionMode {
			case batchv1.IndexedCompletion:
				if o.Spec.Completions == nil {
					errs = append(errs, field.Required(spec.Child("completions"), "when completionMode is Indexed"))
				}
			case batchv1.NonIndexedCompletion:
			default:
				errs = append(errs, field.NotSupported(spec.Child("completionMode"), *o.Spec.CompletionMode, []string{"Indexed", "NonIndexed"}))
			}
		}
		for name, n := range map[string]*int32{"completions": o.Spec.Completions, "parallelism": o.Spec.Parallelism, "backoffLimit": o.Spec.BackoffLimit} {
			if n != nil && *n < 0 {
				errs = append(errs, field.Invalid(spec.Child(name), *n, "must be greater than or equal to 0"))
			}
		}
		rp := o.Spec.Template.Spec.RestartPolicy
		if rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
			errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), rp, []string{"Never", "OnFailure"}))
		}
		errs = append(errs, validatePod(&o.Spec.Template.Spec, spec.Child("template", "spec"))...)
	case *corev1.Pod:
		errs = append(errs, validatePod(&o.Spec, field.NewPath("spec"))...)
	case *appsv1.DaemonSet:
		errs = append(errs, validatePod(&o.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))...)
	case *appsv1.Deployment:
		errs = append(errs, validatePod(&o.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))...)
	case *corev1.Service:
		for i, p := range o.Spec.Ports {
			path := field.NewPath("spec", "ports").Index(i)
			if p.Port < 1 || p.Port > 65535 {
				errs = append(errs, field.Invalid(path.Child("port"), p.Port, "must be 1 to 65535"))
			}
			if p.TargetPort.Type == 1 { // a name
				for _, m := range validation.IsValidPortName(p.TargetPort.StrVal) {
					errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort.StrVal, m))
				}
			}
		}
	}
	return errs
}

// The fields the downward API serves as environment variables.
var downward = map[string]bool{
	"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
	"spec.nodeName": true, "spec.serviceAccountName": true, "status.hostIP": true,
	"status.hostIPs": true, "status.podIP": true, "status.podIPs": true,
}

func validatePod(pod *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes := map[string]bool{}
	for i, v := range pod.Volumes {
		p := path.Child("volumes").Index(i)
		for _, m := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), v.Name, m))
		}
		if volumes[v.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		volumes[v.Name] = true
		if n := oneSource(v.VolumeSource); n != 1 {
			errs = append(errs, field.Invalid(p, v.Name, fmt.Sprintf("%d volume sources given: exactly one is allowed", n)))
		}
	}
	if len(pod.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	names := map[string]bool{}
	all := [][]corev1.Container{pod.InitContainers, pod.Containers}
	for k, list := range all {
		kind := []string{"initContainers", "containers"}[k]
		for i, c := range list {
			p := path.Child(kind).Index(i)
			for _, m := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, m))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names[c.Name] = true
			if strings.TrimSpace(c.Image) == "" {
				errs = append(errs, field.Required(p.Child("image"), ""))
			}
			for j, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					errs = append(errs, field.NotFound(p.Child("volumeMounts").Index(j).Child("name"), m.Name))
				}
				if !strings.HasPrefix(m.MountPath, "/") {
					errs = append(errs, field.Invalid(p.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, "must be an absolute path"))
				}
			}
			for j, port := range c.Ports {
				pp := p.Child("ports").Index(j)
				if port.Name != "" {
					for _, m := range validation.IsValidPortName(port.Name) {
						errs = append(errs, field.Invalid(pp.Child("name"), port.Name, m))
					}
				}
				for _, m := range validation.IsValidPortNum(int(port.ContainerPort)) {
					errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, m))
				}
			}
			for j, e := range c.Env {
				ep := p.Child("env").Index(j)
				for _, m := range validation.IsEnvVarName(e.Name) {
					errs = append(errs, field.Invalid(ep.Child("name"), e.Name, m))
				}
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
					fp := e.ValueFrom.FieldRef.FieldPath
					if !downward[fp] && !strings.HasPrefix(fp, "metadata.labels[") && !strings.HasPrefix(fp, "metadata.annotations[") {
						errs = append(errs, field.NotSupported[string](ep.Child("valueFrom", "fieldRef", "fieldPath"), fp, nil))
					}
				}
			}
		}
	}
	return errs
}
