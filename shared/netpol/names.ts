// Names, labels and ports: apimachinery's rules (k8s.io/apimachinery/pkg/util/validation), with
// its messages word for word. Pure; used by the NetworkPolicy validator, the orchestrator's
// namespace and pod-label routes and the scenario files.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Problems of a namespace name (an RFC 1123 label); [] when valid. */
export function dns1123LabelErrors(v: string): string[] {
  if (v.length > 63) return ['must be no more than 63 characters'];
  if (!DNS1123_LABEL.test(v))
    return [
      `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
    ];
  return [];
}

/** Problems of an object name such as a NetworkPolicy's (an RFC 1123 subdomain); [] when valid. */
export function dns1123SubdomainErrors(v: string): string[] {
  if (v.length > 253) return ['must be no more than 253 characters'];
  if (!DNS1123_SUBDOMAIN.test(v))
    return [
      `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    ];
  return [];
}

/**
 * What breaks an RFC 1123 label or subdomain, pointed at: the first character it does not allow
 * (1-based, as people count), or the end it must not start or end with. Said before
 * apimachinery's message, which names the rule but not the place; undefined when nothing does.
 */
export function dns1123Offence(v: string, rule: 'label' | 'subdomain'): string | undefined {
  const allowed = rule === 'label' ? /[-a-z0-9]/ : /[-a-z0-9.]/;
  const chars = [...v];
  const bad = chars.findIndex((c) => !allowed.test(c));
  if (bad >= 0) {
    const c = chars[bad]!;
    const hint = /[A-Z]/.test(c) ? ' (lower case only)' : c === '_' ? " (write '-')" : '';
    return `${JSON.stringify(c)} (character ${bad + 1}) is not allowed${hint}`;
  }
  const parts = rule === 'label' ? [v] : v.split('.');
  let at = 1;
  for (const part of parts) {
    if (part === '') return `character ${at} leaves an empty part between dots`;
    if (!/^[a-z0-9]/.test(part))
      return `${JSON.stringify(part[0])} (character ${at}) starts ${rule === 'label' ? 'it' : 'a part'}; it must be a letter or digit`;
    if (!/[a-z0-9]$/.test(part))
      return `${JSON.stringify(part.at(-1))} (character ${at + part.length - 1}) ends ${rule === 'label' ? 'it' : 'a part'}; it must be a letter or digit`;
    at += part.length + 1;
  }
  return undefined;
}

/** Problems of a label key (a qualified name: optional DNS subdomain prefix and '/', then a name); [] when valid. */
export function labelKeyErrors(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2)
    return [
      `a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  const name = parts[parts.length - 1]!;
  const out: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix === '') out.push('prefix part must be non-empty');
    else out.push(...dns1123SubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  }
  if (name === '') out.push('name part must be non-empty');
  else if (name.length > 63) out.push('name part must be no more than 63 characters');
  else if (!QUALIFIED_NAME_PART.test(name))
    out.push(
      `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
    );
  return out;
}

/** Problems of a label value (empty allowed); [] when valid. */
export function labelValueErrors(v: string): string[] {
  if (v.length > 63) return ['must be no more than 63 characters'];
  if (v !== '' && !QUALIFIED_NAME_PART.test(v))
    return [
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    ];
  return [];
}

/** Problems of a port name (IANA_SVC_NAME, as container port names and named policy ports); [] when valid. */
export function portNameErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(v)) out.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (v.includes('--')) out.push('must not contain consecutive hyphens');
  if (!/[a-z]/.test(v)) out.push('must contain at least one letter (a-z)');
  if (v.startsWith('-') || v.endsWith('-')) out.push('must not begin or end with a hyphen');
  return out;
}
