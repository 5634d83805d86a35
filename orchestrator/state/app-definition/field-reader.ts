// Type-level reading of a JSON body (Marathon's Play JSON reads): each getter returns the field
// when it has the right type, undefined when it is absent or null, and records Play's error
// (`error.expected.jsnumber`, ...) at the field's path otherwise. These errors are the 400s.
import { plainMap } from '../labels.ts';
import type { Json, JsonObject } from './types.ts';
import { Violations } from './violations.ts';

export class FieldReader extends Violations {
  str(o: JsonObject, key: string, path: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') return void this.add(`${path}/${key}`, 'error.expected.jsstring');
    return v;
  }

  /** A number; a numeric string is read as its number (Marathon's clients send both). */
  num(o: JsonObject, key: string, path: string, integer = false): number | undefined {
    let v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) v = Number(v);
    if (typeof v !== 'number' || !Number.isFinite(v)) return void this.add(`${path}/${key}`, 'error.expected.jsnumber');
    if (integer && !Number.isInteger(v)) return void this.add(`${path}/${key}`, 'error.expected.int');
    return v;
  }

  /** A boolean; "true" and "false" are read as booleans. */
  bool(o: JsonObject, key: string, path: string): boolean | undefined {
    let v = o[key];
    if (v === undefined || v === null) return undefined;
    if (v === 'true' || v === 'false') v = v === 'true';
    if (typeof v !== 'boolean') return void this.add(`${path}/${key}`, 'error.expected.jsboolean');
    return v;
  }

  obj(o: JsonObject, key: string, path: string): JsonObject | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) return void this.add(`${path}/${key}`, 'error.expected.jsobject');
    return v;
  }

  arr(o: JsonObject, key: string, path: string): Json[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return void this.add(`${path}/${key}`, 'error.expected.jsarray');
    return v;
  }

  strArr(o: JsonObject, key: string, path: string): string[] | undefined {
    const a = this.arr(o, key, path);
    if (!a) return undefined;
    const out: string[] = [];
    a.forEach((v, i) => {
      if (typeof v !== 'string') this.add(`${path}/${key}(${i})`, 'error.expected.jsstring');
      else out.push(v);
    });
    return out;
  }

  strMap(o: JsonObject, key: string, path: string): Record<string, string> | undefined {
    const m = this.obj(o, key, path);
    if (!m) return undefined;
    // Prototype-free: a label named __proto__ is kept, one named constructor is not inherited.
    const out = plainMap<string>();
    for (const [k, v] of Object.entries(m)) {
      if (typeof v !== 'string') this.add(`${path}/${key}/${k}`, 'error.expected.jsstring');
      else out[k] = v;
    }
    return out;
  }

  objArr(o: JsonObject, key: string, path: string): JsonObject[] | undefined {
    const a = this.arr(o, key, path);
    if (!a) return undefined;
    const out: JsonObject[] = [];
    a.forEach((v, i) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) this.add(`${path}/${key}(${i})`, 'error.expected.jsobject');
      else out.push(v);
    });
    return out;
  }
}
