/**
 * `chime-web-assets`: the manifest `npm run build` writes (dist/console/assets.json), mapped by wrangler.toml's
 * `[alias]` when the Worker is bundled. Declared here so the type checker needs no build (and does not infer a type
 * from 2 MB of JSON).
 */
declare module 'chime-web-assets' {
  const assets: import('../console/assets.ts').WebAssets;
  export default assets;
}
