// Validates Kubernetes manifests (multi-document YAML files given as
// arguments) against the API schemas shipped by the npm kubernetes-models
// packages (ajv, the OpenAPI schemas of each kind): every object must be of
// a known kind and pass its schema. Exit 1 with the errors otherwise.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const modules = {
  "v1": "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "policy/v1": "kubernetes-models/policy/v1",
  "autoscaling/v2": "kubernetes-models/autoscaling/v2",
  "keda.sh/v1alpha1": "@kubernetes-models/keda/keda.sh/v1alpha1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

let failed = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.error(`${file}: YAML: ${doc.errors[0].message}`);
      failed++;
      continue;
    }
    const obj = doc.toJS();
    if (!obj) continue;
    const where = `${file}: ${obj.kind} ${obj.metadata?.name}`;
    const mod = modules[obj.apiVersion];
    if (!mod) {
      console.error(`${where}: no schema for apiVersion ${obj.apiVersion}`);
      failed++;
      continue;
    }
    const Kind = (await import(`${mod}/${obj.kind}`))[obj.kind];
    try {
      new Kind(obj).validate();
      checked++;
    } catch (e) {
      console.error(`${where}: ${e.message}`);
      failed++;
    }
  }
}
console.log(`${checked} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
