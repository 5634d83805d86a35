// undici's Client class and its request method, each from its own file (shared/checks.ts loads
// them without undici's index): the Client file exports the class that undici's index exports as
// Client, and the request file the function undici's index puts on Dispatcher.prototype.request.
declare module 'undici/lib/dispatcher/client.js' {
  import type { Client } from 'undici';
  const ClientClass: typeof Client;
  export default ClientClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export default request;
}
