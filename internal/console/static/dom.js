// The console's one DOM helper, shared by its modules.

// el builds an element: el('p', {class: 'x'}, 'text', child). Attributes
// named on… add a listener; true sets an empty attribute; false, null and
// undefined leave it out.
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, v);
  }
  e.append(...kids.filter((k) => k !== null && k !== undefined));
  return e;
}
