// One serialisation per event: the bus hands the same event object to every listener, so the SSE
// clients and the callback dispatcher share the JSON text (100 stream clients cost one
// JSON.stringify, not 100). Weakly keyed: nothing is kept once the event is gone.
import type { MarathonEvent } from './bus.ts';

const jsonCache = new WeakMap<MarathonEvent, string>();

/** The event as one line of JSON (JSON.stringify never emits raw newlines). */
export function eventJson(event: MarathonEvent): string {
  let text = jsonCache.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    jsonCache.set(event, text);
  }
  return text;
}
