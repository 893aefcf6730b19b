'use strict';

/**
 * Characters that are replaced when a value is HTML-escaped. Besides the usual
 * `& < > " '`, the slash, backtick and equals sign are escaped too so that a
 * value can never close or open an attribute in unquoted attribute context.
 */
const ENTITY_MAP = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '/': '&#x2F;',
  '`': '&#x60;',
  '=': '&#x3D;',
};

const ESCAPE_RE = /[&<>"'`=/]/g;

function escapeHtml(value) {
  return String(value).replace(ESCAPE_RE, (ch) => ENTITY_MAP[ch]);
}

/** Escaping function that leaves the text alone (for non-HTML output). */
function noEscape(value) {
  return String(value);
}

module.exports = { escapeHtml, noEscape, ENTITY_MAP };
