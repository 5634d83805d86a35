// The app's container (`container`: type, volumes, and for DOCKER the image, network, port
// mappings, parameters): read with Marathon's defaults, then checked.
import type { FieldReader } from './field-reader.ts';
import { validatePortMapping } from './ports.ts';
import type { AppDefinition, Container, JsonObject } from './types.ts';
import type { Violations } from './violations.ts';

export function readContainer(r: FieldReader, o: JsonObject): Container | null {
  const raw = r.obj(o, 'container', '');
  if (!raw) return null;
  const type = r.str(raw, 'type', '/container') ?? 'DOCKER';
  const volumes = (r.objArr(raw, 'volumes', '/container') ?? []).map((v, i) => {
    const vp = `/container/volumes(${i})`;
    return {
      containerPath: r.str(v, 'containerPath', vp) ?? '',
      hostPath: r.str(v, 'hostPath', vp) ?? '',
      mode: (r.str(v, 'mode', vp) ?? 'RW') as 'RO' | 'RW',
    };
  });
  const container: Container = { type, volumes };
  const d = r.obj(raw, 'docker', '/container');
  if (d) {
    const dp = '/container/docker';
    const portMappings = (r.objArr(d, 'portMappings', dp) ?? []).map((m, i) => {
      const mp = `${dp}/portMappings(${i})`;
      const name = r.str(m, 'name', mp);
      return {
        containerPort: r.num(m, 'containerPort', mp, true) ?? 0,
        hostPort: r.num(m, 'hostPort', mp, true) ?? 0,
        servicePort: r.num(m, 'servicePort', mp, true) ?? 0,
        protocol: r.str(m, 'protocol', mp) ?? 'tcp',
        ...(name !== undefined ? { name } : {}),
        labels: r.strMap(m, 'labels', mp) ?? {},
      };
    });
    const parameters = (r.objArr(d, 'parameters', dp) ?? []).map((x, i) => ({
      key: r.str(x, 'key', `${dp}/parameters(${i})`) ?? '',
      value: r.str(x, 'value', `${dp}/parameters(${i})`) ?? '',
    }));
    container.docker = {
      image: r.str(d, 'image', dp) ?? '',
      network: (r.str(d, 'network', dp) ?? 'HOST') as 'HOST',
      portMappings,
      privileged: r.bool(d, 'privileged', dp) ?? false,
      parameters,
      forcePullImage: r.bool(d, 'forcePullImage', dp) ?? false,
    };
  }
  return container;
}

export function validateContainer(app: AppDefinition, v: Violations): void {
  const d = app.container?.docker;
  if (app.container) {
    if (!['DOCKER', 'MESOS'].includes(app.container.type)) v.add('/container/type', 'is not one of (DOCKER, MESOS)');
    if (app.container.type === 'DOCKER' && !d) v.add('/container/docker', 'not defined');
    app.container.volumes.forEach((vol, i) => {
      if (!vol.containerPath) v.add(`/container/volumes(${i})/containerPath`, 'must not be empty');
      if (vol.mode !== 'RO' && vol.mode !== 'RW') v.add(`/container/volumes(${i})/mode`, 'is not one of (RO, RW)');
    });
  }
  if (d) {
    if (!d.image) v.add('/container/docker/image', 'must not be empty');
    if (!['HOST', 'BRIDGE', 'USER', 'NONE'].includes(d.network)) v.add('/container/docker/network', 'is not one of (HOST, BRIDGE, USER, NONE)');
    d.portMappings.forEach((m, i) => validatePortMapping(m, `/container/docker/portMappings(${i})`, v));
    const names = d.portMappings.flatMap((m) => (m.name !== undefined ? [m.name] : []));
    if (new Set(names).size !== names.length) v.add('/container/docker/portMappings', 'Port names must be unique.');
  }
}
