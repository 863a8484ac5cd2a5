/**
 * Starts Swagger UI on `/docs` (loaded after swagger-ui-dist's bundle, which defines `SwaggerUIBundle`): a script of
 * its own file, since the page's CSP allows no inline script. `validatorUrl: null`: Swagger UI would otherwise load
 * a badge from validator.swagger.io, another origin. The page's icon is the console's.
 */
import { setIcon } from './icon.ts';

declare const SwaggerUIBundle: (options: Record<string, unknown>) => unknown;

setIcon();
(globalThis as { ui?: unknown }).ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  deepLinking: true,
});
