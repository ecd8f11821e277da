// What holds the agent's memory: the retained size of each instance of the agent's own classes
// (and of the largest objects) in a V8 heap snapshot, from its dominator tree. Reads the snapshot
// `bench:sync --heap-snapshot` writes.
// Run: npm run bench:heap -- FILE.heapsnapshot [--deployments N] [--top 25] [--inside ClassName]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    deployments: { type: 'string' },
    top: { type: 'string', default: '25' },
    inside: { type: 'string' },
  },
});
const [file] = positionals;
if (!file) {
  console.error('usage: npm run bench:heap -- FILE.heapsnapshot [--deployments N] [--top 25]');
  process.exit(2);
}

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const snap = JSON.parse(await readFile(file, 'utf8')) as Snapshot;
const { meta } = snap.snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const nType = meta.node_fields.indexOf('type');
const nName = meta.node_fields.indexOf('name');
const nSelf = meta.node_fields.indexOf('self_size');
const nEdges = meta.node_fields.indexOf('edge_count');
const eType = meta.edge_fields.indexOf('type');
const eTo = meta.edge_fields.indexOf('to_node');
const weak = meta.edge_types[0].indexOf('weak');
const shortcut = meta.edge_types[0].indexOf('shortcut');
const nodeTypes = meta.node_types[0];
const count = snap.nodes.length / NF;

// Each node's first edge, and its successors (weak edges hold nothing alive).
const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += (snap.nodes[i * NF + nEdges] ?? 0) * EF;
}
firstEdge[count] = snap.edges.length;
const successors = (node: number, visit: (to: number) => void) => {
  for (let e = firstEdge[node] ?? 0; e < (firstEdge[node + 1] ?? 0); e += EF) {
    const type = snap.edges[e + eType];
    if (type === weak || type === shortcut) continue;
    visit((snap.edges[e + eTo] ?? 0) / NF);
  }
};

// Reverse postorder from the root (node 0), iteratively.
const order = new Int32Array(count).fill(-1);
const postorder: number[] = [];
{
  const stack: [number, number][] = [[0, firstEdge[0] ?? 0]];
  const seen = new Uint8Array(count);
  seen[0] = 1;
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as [number, number];
    const [node, e] = top;
    if (e >= (firstEdge[node + 1] ?? 0)) {
      stack.pop();
      postorder.push(node);
      continue;
    }
    top[1] = e + EF;
    const type = snap.edges[e + eType];
    if (type === weak || type === shortcut) continue;
    const to = (snap.edges[e + eTo] ?? 0) / NF;
    if (!seen[to]) {
      seen[to] = 1;
      stack.push([to, firstEdge[to] ?? 0]);
    }
  }
}
postorder.forEach((node, i) => {
  order[node] = i;
});
const reachable = postorder.length;

// Predecessors of reachable nodes, then dominators (Cooper, Harvey and Kennedy's iteration).
const predStart = new Uint32Array(count + 1);
const bump = (array: Uint32Array | Float64Array, i: number, by: number) => {
  array[i] = (array[i] ?? 0) + by;
};
for (const node of postorder) successors(node, (to) => bump(predStart, to + 1, 1));
for (let i = 0; i < count; i++) bump(predStart, i + 1, predStart[i] ?? 0);
const preds = new Uint32Array(predStart[count] ?? 0);
const fill = predStart.slice();
for (const node of postorder)
  successors(node, (to) => {
    preds[fill[to] ?? 0] = node;
    bump(fill, to, 1);
  });

const idom = new Int32Array(count).fill(-1);
idom[0] = 0;
const intersect = (a: number, b: number): number => {
  let x = a;
  let y = b;
  while (x !== y) {
    while ((order[x] ?? 0) < (order[y] ?? 0)) x = idom[x] ?? 0;
    while ((order[y] ?? 0) < (order[x] ?? 0)) y = idom[y] ?? 0;
  }
  return x;
};
for (let changed = true; changed; ) {
  changed = false;
  for (let i = reachable - 1; i >= 0; i--) {
    const node = postorder[i] ?? 0;
    if (node === 0) continue;
    let next = -1;
    for (let p = predStart[node] ?? 0; p < (predStart[node + 1] ?? 0); p++) {
      const pred = preds[p] ?? 0;
      if ((idom[pred] ?? -1) === -1) continue;
      next = next === -1 ? pred : intersect(pred, next);
    }
    if (next !== -1 && idom[node] !== next) {
      idom[node] = next;
      changed = true;
    }
  }
}

// Retained size: a node's own size and everything it dominates (children before parents).
const retained = new Float64Array(count);
for (const node of postorder) bump(retained, node, snap.nodes[node * NF + nSelf] ?? 0);
for (const node of postorder) if (node !== 0) bump(retained, idom[node] ?? 0, retained[node] ?? 0);

const nameOf = (node: number) => snap.strings[snap.nodes[node * NF + nName] ?? 0] ?? '';
const typeOf = (node: number) => nodeTypes[snap.nodes[node * NF + nType] ?? 0] ?? '';
const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
const perDeployment = (bytes: number) =>
  values.deployments ? ` (${(bytes / 1024 / Number(values.deployments)).toFixed(1)} KiB per deployment)` : '';

let total = 0;
for (const node of postorder) total += snap.nodes[node * NF + nSelf] ?? 0;
console.log(`reachable heap ${MiB(total)} MiB in ${reachable} nodes${perDeployment(total)}`);

// The agent's own classes (their names survive the bundle), by retained size.
const byClass = new Map<string, { instances: number; retained: number }>();
for (const node of postorder) {
  if (typeOf(node) !== 'object') continue;
  const name = nameOf(node);
  if (!/^[A-Z][A-Za-z]+$/.test(name) || ['Object', 'Array', 'Map', 'Set', 'Promise'].includes(name)) continue;
  const entry = byClass.get(name) ?? { instances: 0, retained: 0 };
  entry.instances++;
  entry.retained += retained[node] ?? 0;
  byClass.set(name, entry);
}
console.log('\nretained by class (instances; one instance may hold another):');
for (const [name, { instances, retained: bytes }] of [...byClass]
  .sort((a, b) => b[1].retained - a[1].retained)
  .slice(0, Number(values.top))) {
  console.log(`  ${MiB(bytes).padStart(8)} MiB  ${name} (${instances})${perDeployment(bytes)}`);
}

// The largest single holders and what dominates them.
console.log('\nlargest retainers (node ← its dominator):');
const largest = postorder
  .filter((node) => node !== 0 && typeOf(node) !== 'synthetic' && typeOf(node) !== 'hidden')
  .sort((a, b) => (retained[b] ?? 0) - (retained[a] ?? 0))
  .slice(0, Number(values.top));
for (const node of largest) {
  const owner = idom[node] ?? 0;
  console.log(
    `  ${MiB(retained[node] ?? 0).padStart(8)} MiB  ${typeOf(node)} ${nameOf(node).slice(0, 60)} ← ${typeOf(owner)} ${nameOf(owner).slice(0, 40)}`,
  );
}

// What one class's instances hold, by node type and (for strings, the first characters) name.
if (values.inside) {
  const children = new Map<number, number[]>();
  for (const node of postorder) {
    if (node === 0) continue;
    const owner = idom[node] ?? 0;
    const list = children.get(owner) ?? [];
    list.push(node);
    children.set(owner, list);
  }
  const composition = new Map<string, { nodes: number; bytes: number }>();
  const stack = postorder.filter((node) => typeOf(node) === 'object' && nameOf(node) === values.inside);
  while (stack.length > 0) {
    const node = stack.pop() ?? 0;
    for (const child of children.get(node) ?? []) stack.push(child);
    const type = typeOf(node);
    const label =
      type === 'string' || type === 'concatenated string'
        ? `string ${nameOf(node).slice(0, 24)}`
        : `${type} ${nameOf(node).slice(0, 40)}`;
    const entry = composition.get(label) ?? { nodes: 0, bytes: 0 };
    entry.nodes++;
    entry.bytes += snap.nodes[node * NF + nSelf] ?? 0;
    composition.set(label, entry);
  }
  console.log(`\ninside ${values.inside}, by node (count, self size):`);
  for (const [label, { nodes, bytes }] of [...composition]
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .slice(0, Number(values.top))) {
    console.log(`  ${(bytes / 1024).toFixed(0).padStart(8)} KiB  ${String(nodes).padStart(7)}  ${label}`);
  }
}
