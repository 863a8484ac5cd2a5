/**
 * The pages' icon (the console's and /docs'): a bell on the accent colour, set as a `data:` URL from the page's own
 * script (the CSP allows `img-src data:`), so the HTML shell names nothing but its script and stylesheet.
 */
const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2453d6"/>' +
  '<path d="M16 6a7 7 0 0 0-7 7v5l-2.5 4h19L23 18v-5a7 7 0 0 0-7-7zm-3 18a3 3 0 0 0 6 0z" fill="#fff"/></svg>';

/** Adds the icon to the document's head (once). */
export function setIcon(): void {
  if (document.querySelector('link[rel="icon"]')) return;
  const link = document.createElement('link');
  link.rel = 'icon';
  link.type = 'image/svg+xml';
  link.href = `data:image/svg+xml,${encodeURIComponent(ICON_SVG)}`;
  document.head.append(link);
}
