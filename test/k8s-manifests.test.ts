// infra/k8s read as Kubernetes would wire it (no cluster needed): every Deployment is probed,
// drains within its grace period, runs as non-root and has a disruption budget; Services and
// the Ingress point at what exists; the shared settings are ones Parley accepts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '@parley/config';
import { repoRoot } from '@parley/devservices';

interface Manifest {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
type Container = {
  name: string;
  image: string;
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string } };
  livenessProbe?: unknown;
  lifecycle?: { preStop?: unknown };
  envFrom?: unknown[];
};
type PodSpec = {
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean };
  containers: Container[];
};

const dir = join(repoRoot(), 'infra', 'k8s');
const kustomization = parseAllDocuments(
  readFileSync(join(dir, 'kustomization.yaml'), 'utf8'),
)[0]!.toJS() as {
  resources: string[];
  images: { name: string }[];
};
const manifests: Manifest[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => doc.toJS() as Manifest),
);
const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const podLabels = (deployment: Manifest) =>
  (deployment.spec as { template: { metadata: { labels: Record<string, string> } } }).template
    .metadata.labels;
const podSpec = (deployment: Manifest) =>
  (deployment.spec as { template: { spec: PodSpec } }).template.spec;
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('Kubernetes manifests (infra/k8s)', () => {
  it('lists every manifest file in the kustomization', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect(kustomization.resources.sort()).toEqual(files.sort());
  });

  it('runs the API, events and worker tiers as separate Deployments of the bundles', () => {
    const deployments = ofKind('Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'parley-api',
      'parley-events',
      'parley-worker',
    ]);
    const bundles = deployments.map((d) => podSpec(d).containers[0]!.args?.join(' '));
    expect(bundles.sort()).toEqual([
      'node dist/api.cjs',
      'node dist/events.cjs',
      'node dist/worker.cjs',
    ]);
    const images = new Set(kustomization.images.map((image) => image.name));
    for (const d of [...deployments, ...ofKind('Job')])
      for (const c of (d.spec as { template: { spec: PodSpec } }).template.spec.containers)
        expect(images.has(c.image)).toBe(true);
  });

  it('probes, drains and runs every Deployment as a non-root user', () => {
    for (const deployment of ofKind('Deployment')) {
      const spec = podSpec(deployment);
      // Longer than the 10 s drain plus the preStop pause.
      expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(20);
      expect(spec.securityContext?.runAsNonRoot).toBe(true);
      for (const container of spec.containers) {
        expect(container.livenessProbe).toBeDefined();
        expect(container.envFrom).toEqual([
          { configMapRef: { name: 'parley' } },
          { secretRef: { name: 'parley' } },
        ]);
        if (deployment.metadata.name === 'parley-worker') continue;
        // Serving tiers leave the load balancer before they drain, and only when ready.
        expect(container.readinessProbe?.httpGet?.path).toBe('/ready');
        expect(container.lifecycle?.preStop).toBeDefined();
      }
    }
  });

  it('gives every Deployment a PodDisruptionBudget that selects its pods', () => {
    const budgets = ofKind('PodDisruptionBudget');
    for (const deployment of ofKind('Deployment')) {
      const covering = budgets.filter((b) =>
        matches(
          (b.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
          podLabels(deployment),
        ),
      );
      expect(covering.map((b) => b.metadata.name)).toEqual([deployment.metadata.name]);
    }
  });

  it('routes Services and the Ingress to ports that exist, events to the events tier', () => {
    const services = new Map(ofKind('Service').map((s) => [s.metadata.name, s]));
    for (const service of services.values()) {
      const spec = service.spec as {
        selector: Record<string, string>;
        ports: { targetPort: string }[];
      };
      const target = ofKind('Deployment').find((d) => matches(spec.selector, podLabels(d)));
      expect(target).toBeDefined();
      const portNames = podSpec(target!).containers.flatMap((c) =>
        (c.ports ?? []).map((p) => p.name),
      );
      for (const port of spec.ports) expect(portNames).toContain(port.targetPort);
    }
    const [ingress] = ofKind('Ingress');
    const paths = (
      ingress!.spec as {
        rules: { http: { paths: { path: string; backend: { service: { name: string } } }[] } }[];
      }
    ).rules.flatMap((rule) => rule.http.paths);
    expect(paths.map((p) => [p.path, p.backend.service.name])).toEqual([
      ['/api/v1/events', 'parley-events'],
      ['/', 'parley-api'],
    ]);
    for (const path of paths) expect(services.has(path.backend.service.name)).toBe(true);
  });

  it('lets the settings and the migration be applied alone, before the tiers (runbook)', () => {
    const labelled = manifests
      .filter((m) =>
        ['parley-config', 'parley-migrate'].includes(
          (m.metadata as { labels?: Record<string, string> }).labels?.['app.kubernetes.io/name'] ??
            '',
        ),
      )
      .map((m) => m.kind)
      .sort();
    expect(labelled).toEqual(['ConfigMap', 'Job']);
  });

  it('sets only settings Parley accepts', () => {
    const [config] = ofKind('ConfigMap');
    const parsed = parseConfig({
      ...config!.data,
      DATABASE_URL: 'postgresql://parley@db:5432/parley',
      REDIS_URL: 'redis://redis:6379',
    }) as unknown as Record<string, unknown>;
    // Valid values, and every name one Parley reads (a typo would be silently ignored).
    for (const name of Object.keys(config!.data!)) expect(Object.keys(parsed)).toContain(name);
  });
});
