package deploy_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// rendered is one overlay's output, every object decoded into its type.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	configMaps  map[string]*corev1.ConfigMap
	namespaces  map[string]*corev1.Namespace
}

// render runs Kustomize on dir and decodes every object strictly: a field
// its Kubernetes type does not have (a typo, a wrong indent) fails.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := rendered{
		deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		services: map[string]*corev1.Service{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, configMaps: map[string]*corev1.ConfigMap{},
		namespaces: map[string]*corev1.Namespace{},
	}
	for _, r := range m.Resources() {
		body, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		name := r.GetName()
		var obj any
		switch kind := r.GetKind(); kind {
		case "Deployment":
			out.deployments[name] = &appsv1.Deployment{}
			obj = out.deployments[name]
		case "Job":
			out.jobs[name] = &batchv1.Job{}
			obj = out.jobs[name]
		case "Service":
			out.services[name] = &corev1.Service{}
			obj = out.services[name]
		case "PodDisruptionBudget":
			out.pdbs[name] = &policyv1.PodDisruptionBudget{}
			obj = out.pdbs[name]
		case "HorizontalPodAutoscaler":
			out.hpas[name] = &autoscalingv2.HorizontalPodAutoscaler{}
			obj = out.hpas[name]
		case "ConfigMap":
			out.configMaps[name] = &corev1.ConfigMap{}
			obj = out.configMaps[name]
		case "Namespace":
			out.namespaces[name] = &corev1.Namespace{}
			obj = out.namespaces[name]
		default:
			t.Errorf("%s %s: a kind this test does not know (a Secret must never be inlined)", kind, name)
			continue
		}
		// Case-sensitive, as the API server reads it: encoding/json would
		// take readOnlyRootFileSystem for readOnlyRootFilesystem.
		js, err := yaml.YAMLToJSON(body)
		if err != nil {
			t.Fatal(err)
		}
		strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil || len(strict) > 0 {
			t.Errorf("%s %s: %v %v", r.GetKind(), name, err, strict)
		}
	}
	return out
}

// checkPod checks what every platform container must have: non-root, a
// read-only root file system, no privilege escalation, memory bounded.
func checkPod(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("%s: pod securityContext.runAsNonRoot is not true", what)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s/%s: no securityContext", what, c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s/%s: root file system is writable", what, c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s/%s: privilege escalation is allowed", what, c.Name)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: resources %+v, want cpu and memory requests and a memory limit", what, c.Name, c.Resources)
		}
		for _, e := range c.Env {
			if e.Value != "" && (e.Name == "DATABASE_URL" || e.Name == "IDENTITY_MASTER_KEY" || e.Name == "BOX_MASTER_KEY" ||
				e.Name == "COURIER_SECRET_BOX_KEY" || e.Name == "COURIER_SMTP_PASSWORD" || e.Name == "KEYHOLDER_REGISTRY_PASSWORD") {
				t.Errorf("%s/%s: %s is inlined, want a secretKeyRef", what, c.Name, e.Name)
			}
		}
	}
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestKustomizeOutputIsValidAndEveryDeploymentHardened(t *testing.T) {
	secrets := map[string][]string{ // Deployment → secret env it must reference
		"identity":  {"DATABASE_URL", "IDENTITY_MASTER_KEY"},
		"box":       {"DATABASE_URL", "BOX_MASTER_KEY"},
		"courier":   {"DATABASE_URL", "COURIER_SECRET_BOX_KEY"},
		"keyholder": {"DATABASE_URL"},
	}
	stateless := []string{"identity", "box", "courier", "keyholder", "gateway", "parlor"}
	for _, dir := range []string{"k8s/base", "k8s/overlays/production"} {
		t.Run(dir, func(t *testing.T) {
			out := render(t, dir)
			want := append([]string{"identity-publisher", "courier-publisher"}, stateless...)
			if len(out.deployments) != len(want) {
				t.Errorf("got %d Deployments, want %d (%v)", len(out.deployments), len(want), want)
			}
			for _, name := range want {
				d, ok := out.deployments[name]
				if !ok {
					t.Errorf("no Deployment %s", name)
					continue
				}
				checkPod(t, "Deployment "+name, d.Spec.Template.Spec)
				if len(d.Spec.Template.Spec.Containers) != 1 {
					t.Fatalf("Deployment %s: %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
				}
				c := d.Spec.Template.Spec.Containers[0]
				if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet == nil {
					t.Errorf("Deployment %s: readiness %v, liveness %v; want HTTP probes", name, c.ReadinessProbe, c.LivenessProbe)
				} else if d.Name != "identity-publisher" && d.Name != "courier-publisher" &&
					(c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz") {
					t.Errorf("Deployment %s: readiness on %s, liveness on %s; want /readyz and /healthz",
						name, c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
				}
				for _, v := range []string{"GOMEMLIMIT", "GOGC", "METRICS_ADDR"} {
					if e := env(c, v); e == nil || e.Value == "" {
						t.Errorf("Deployment %s: %s is not set", name, v)
					}
				}
				for _, v := range secrets[name] {
					if e := env(c, v); e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("Deployment %s: %s is not read from a Secret", name, v)
					}
				}
				if c.Image == "platform" || c.Image == "" {
					t.Errorf("Deployment %s: image %q, want the registry's", name, c.Image)
				}
			}
			for _, name := range stateless {
				if _, ok := out.services[name]; !ok {
					t.Errorf("no Service %s", name)
				}
				if p, ok := out.pdbs[name]; !ok {
					t.Errorf("no PodDisruptionBudget %s", name)
				} else if p.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != name {
					t.Errorf("PodDisruptionBudget %s selects %v", name, p.Spec.Selector.MatchLabels)
				}
				if h, ok := out.hpas[name]; !ok {
					t.Errorf("no HorizontalPodAutoscaler %s", name)
				} else if h.Spec.ScaleTargetRef.Kind != "Deployment" || out.deployments[h.Spec.ScaleTargetRef.Name] == nil {
					t.Errorf("HorizontalPodAutoscaler %s scales %+v, no such Deployment", name, h.Spec.ScaleTargetRef)
				}
			}
			for _, svc := range []string{"identity", "box", "courier", "keyholder"} {
				j, ok := out.jobs[svc+"-migrate"]
				if !ok {
					t.Errorf("no migration Job for %s", svc)
					continue
				}
				checkPod(t, "Job "+j.Name, j.Spec.Template.Spec)
				if args := j.Spec.Template.Spec.Containers[0].Args; len(args) != 2 || args[0] != svc || args[1] != "migrate" {
					t.Errorf("Job %s: args %v, want [%s migrate]", j.Name, args, svc)
				}
			}
		})
	}
	prod := render(t, "k8s/overlays/production")
	if got := *prod.deployments["identity"].Spec.Replicas; got != 3 {
		t.Errorf("production identity replicas: got %d, want 3", got)
	}
	if got := env(prod.deployments["identity"].Spec.Template.Spec.Containers[0], "GOMEMLIMIT"); got == nil || got.Value != "920MiB" {
		t.Errorf("production identity GOMEMLIMIT: got %+v, want 920MiB", got)
	}
	if got := env(prod.deployments["identity"].Spec.Template.Spec.Containers[0], "IDENTITY_MASTER_KEY"); got == nil || got.ValueFrom == nil {
		t.Errorf("production identity lost IDENTITY_MASTER_KEY's secretKeyRef in the patch: %+v", got)
	}
	for name, d := range prod.deployments {
		if d.Namespace != "platform" {
			t.Errorf("production Deployment %s in namespace %q, want platform", name, d.Namespace)
		}
	}
}
