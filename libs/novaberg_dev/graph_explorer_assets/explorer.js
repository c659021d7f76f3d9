/* The Novaberg graph explorer: sigma.js over the data written by novaberg_dev.graph_explorer.
   Filters decide visibility once per change (two byte arrays); the reducers only read them. */
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("graph-data").textContent);
  const NODES = D.nodes, EDGES = D.edges;
  const N = NODES.id.length, E = EDGES.a.length;
  const UNKNOWN_LAYER = 1 << D.layers.length; // an edge without a known reason
  const LAYER_NAMES = D.layers.concat(["unbekannt"]);
  const byId = new Map(NODES.id.map((id, i) => [id, i]));

  const $ = (id) => document.getElementById(id);
  function el(tag, props, children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children || []) node.append(child);
    return node;
  }
  function edgeColour(hex, alpha) {
    // Premultiplied: sigma 3.0.3's line program hands the colour to a blend of (ONE, ONE_MINUS_SRC_ALPHA)
    // unchanged, so plain rgba(r,g,b,a) came out washed to white (measured in Chromium).
    const v = parseInt(hex.slice(1), 16);
    const c = (shift) => Math.round(((v >> shift) & 255) * alpha);
    return `rgba(${c(16)},${c(8)},${c(0)},${alpha})`;
  }
  function lighter(hex) { // inactive nodes: the speaker's colour, faded towards white
    const v = parseInt(hex.slice(1), 16);
    const mix = (c) => Math.round(c + (255 - c) * 0.65);
    return `rgb(${mix((v >> 16) & 255)},${mix((v >> 8) & 255)},${mix(v & 255)})`;
  }
  function extent(values) { // no Math.max(...values): too many arguments for large graphs
    let low = Infinity, high = -Infinity;
    for (const v of values) { if (v < low) low = v; if (v > high) high = v; }
    return values.length ? [low, high] : [0, 0];
  }
  const fmt = (x) => Number(x).toFixed(3);
  const day = (seconds) => seconds ? new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ") : "–";
  const reasonsOf = (mask) => LAYER_NAMES.filter((_, bit) => mask & (1 << bit));
  const weightOf = (e) => Math.max(EDGES.ab[e], EDGES.ba[e]);
  const entityName = (id) => D.entityNames[id] || `#${id}`;

  // ---------------------------------------------------------------- the graph
  const maxDecay = Math.max(1e-9, extent(NODES.decay)[1]);
  const maxSize = Math.min(10, Math.max(3, 12 * Math.sqrt(400 / Math.max(N, 1)))); // smaller when crowded
  // Fainter the more edges; two decimals, as sigma's colour parser misreads longer fractions.
  const edgeAlpha = +Math.min(0.6, Math.max(0.06, 30 / Math.sqrt(Math.max(E, 1)))).toFixed(2);
  const faint = {}, strong = {};
  for (const name of LAYER_NAMES) {
    faint[name] = edgeColour(D.layerColours[name], edgeAlpha);
    strong[name] = edgeColour(D.layerColours[name], 0.9);
  }
  const neighbours = Array.from({ length: N }, () => []); // edge indexes per node
  const graph = new graphology.Graph({ type: "undirected", multi: false, allowSelfLoops: false });
  for (let i = 0; i < N; i++) {
    const colour = D.speakers[NODES.speaker[i]].colour;
    graph.addNode(String(i), {
      x: NODES.x[i], y: NODES.y[i], label: NODES.label[i],
      size: 1.5 + (maxSize - 1.5) * Math.sqrt(Math.max(NODES.decay[i], 0) / maxDecay),
      color: NODES.active[i] ? colour : lighter(colour),
    });
  }
  const edgeMask = new Uint8Array(E);
  for (let e = 0; e < E; e++) {
    const mask = EDGES.reasons[e] || UNKNOWN_LAYER;
    edgeMask[e] = mask;
    const winner = LAYER_NAMES[31 - Math.clz32(mask & -mask)]; // lowest bit = highest Schicht-Faktor
    graph.addEdgeWithKey(String(e), String(EDGES.a[e]), String(EDGES.b[e]),
      { color: faint[winner], strong: strong[winner], size: 1 });
    neighbours[EDGES.a[e]].push(e);
    neighbours[EDGES.b[e]].push(e);
  }

  // ---------------------------------------------------------------- state
  const nodeVisible = new Uint8Array(N).fill(1);
  const edgeVisible = new Uint8Array(E).fill(1);
  let selected = -1;
  let selectedNeighbours = new Set();
  let hits = null; // Set of node indexes matching the search, or null

  function nodeReducer(key, data) {
    const i = +key;
    if (!nodeVisible[i]) return { ...data, hidden: true };
    if (selected >= 0) {
      if (i === selected) return { ...data, highlighted: true, zIndex: 2 };
      if (selectedNeighbours.has(i)) return { ...data, zIndex: 1 };
      return { ...data, color: "#dddddd", label: "", zIndex: 0 };
    }
    if (hits) {
      if (hits.has(i)) return { ...data, highlighted: hits.size <= 200, zIndex: 1 };
      return { ...data, color: "#dddddd", label: "", zIndex: 0 };
    }
    return data;
  }
  function edgeReducer(key, data) {
    const e = +key;
    if (!edgeVisible[e]) return { ...data, hidden: true };
    if (selected >= 0) {
      if (EDGES.a[e] !== selected && EDGES.b[e] !== selected) return { ...data, hidden: true };
      return { ...data, color: data.strong, zIndex: 1 };
    }
    if (hits && !(hits.has(EDGES.a[e]) && hits.has(EDGES.b[e]))) return { ...data, hidden: true };
    return data;
  }

  const renderer = new Sigma(graph, $("graph"), {
    defaultEdgeType: "line",
    edgeProgramClasses: { line: Sigma.rendering.EdgeLineProgram },
    labelRenderedSizeThreshold: 8,
    labelDensity: 0.12,
    labelGridCellSize: 160,
    zIndex: true,
    hideEdgesOnMove: E > 50000,
    nodeReducer: nodeReducer,
    edgeReducer: edgeReducer,
  });

  // ---------------------------------------------------------------- filters
  const layerBoxes = [], speakerBoxes = [], stateBoxes = [];
  LAYER_NAMES.forEach((name, bit) => {
    const box = el("input", { type: "checkbox", checked: true, value: String(bit) });
    layerBoxes.push(box);
    const colour = D.layerColours[name] || "#8d8d8d";
    const count = edgeMask.reduce((n, m) => n + ((m >> bit) & 1), 0);
    $("layers").append(el("label", {}, [box, el("span", { className: "swatch", style: `background:${colour}` }),
      `${name} (${count})`]));
  });
  D.speakers.forEach((speaker, code) => {
    const count = NODES.speaker.filter((s) => s === code).length;
    if (!count) return;
    const box = el("input", { type: "checkbox", checked: true, value: String(code) });
    speakerBoxes.push(box);
    $("speakers").append(el("label", {}, [box, el("span", { className: "dot", style: `background:${speaker.colour}` }),
      `${speaker.label} (${count})`]));
  });
  [[1, "aktiv"], [0, "inaktiv (blass)"]].forEach(([state, label]) => {
    const box = el("input", { type: "checkbox", checked: true, value: String(state) });
    stateBoxes.push(box);
    $("states").append(el("label", {}, [box, `${label} (${NODES.active.filter((a) => a === state).length})`]));
  });
  function range(id, low, high, value) {
    const input = $(id);
    input.min = String(low); input.max = String(high); input.value = String(value);
    input.step = String((high - low) / 200 || 0.01);
    return input;
  }
  const edgeWeights = Float64Array.from({ length: E }, (_, e) => weightOf(e));
  const [lowDecay, highDecay] = extent(NODES.decay);
  const [lowEdge, highEdge] = extent(edgeWeights);
  const nodeMin = range("node-min", lowDecay, highDecay, lowDecay);
  const nodeMax = range("node-max", lowDecay, highDecay, highDecay);
  const edgeMin = range("edge-min", lowEdge, highEdge, lowEdge);
  const timeFrom = $("time-from"), timeTo = $("time-to");
  const saidTimes = NODES.said.filter((s) => s > 0);
  if (saidTimes.length) {
    const [first, last] = extent(saidTimes);
    timeFrom.min = timeTo.min = new Date(first * 1000).toISOString().slice(0, 10);
    timeFrom.max = timeTo.max = new Date(last * 1000).toISOString().slice(0, 10);
  }

  function applyFilters(refresh) {
    let layerMask = 0;
    for (const box of layerBoxes) if (box.checked) layerMask |= 1 << +box.value;
    const speakers = new Set(speakerBoxes.filter((b) => b.checked).map((b) => +b.value));
    const states = new Set(stateBoxes.filter((b) => b.checked).map((b) => +b.value));
    const lo = +nodeMin.value, hi = +nodeMax.value, minEdge = +edgeMin.value;
    const from = timeFrom.value ? Date.parse(timeFrom.value + "T00:00:00Z") / 1000 : -Infinity;
    const to = timeTo.value ? Date.parse(timeTo.value + "T00:00:00Z") / 1000 + 86400 : Infinity;
    const timed = timeFrom.value || timeTo.value;
    let nodes = 0, edges = 0;
    for (let i = 0; i < N; i++) {
      const said = NODES.said[i];
      const ok = speakers.has(NODES.speaker[i]) && states.has(NODES.active[i]) &&
        NODES.decay[i] >= lo - 1e-9 && NODES.decay[i] <= hi + 1e-9 &&
        (!timed || (said > 0 && said >= from && said < to));
      nodeVisible[i] = ok ? 1 : 0;
      nodes += nodeVisible[i];
    }
    for (let e = 0; e < E; e++) {
      const ok = nodeVisible[EDGES.a[e]] && nodeVisible[EDGES.b[e]] && (edgeMask[e] & layerMask) &&
        edgeWeights[e] >= minEdge - 1e-9;
      edgeVisible[e] = ok ? 1 : 0;
      edges += edgeVisible[e];
    }
    $("node-min-value").textContent = fmt(lo);
    $("node-max-value").textContent = fmt(hi);
    $("edge-min-value").textContent = fmt(minEdge);
    $("counts").textContent = `${nodes} von ${N} Knoten, ${edges} von ${E} Verbindungen sichtbar`;
    if (refresh !== false) renderer.refresh();
    return { nodes: nodes, edges: edges };
  }
  for (const input of [...layerBoxes, ...speakerBoxes, ...stateBoxes, nodeMin, nodeMax, edgeMin, timeFrom, timeTo]) {
    input.addEventListener(input.type === "range" ? "input" : "change", () => applyFilters());
  }
  $("reset").addEventListener("click", () => {
    for (const box of [...layerBoxes, ...speakerBoxes, ...stateBoxes]) box.checked = true;
    nodeMin.value = String(lowDecay); nodeMax.value = String(highDecay); edgeMin.value = String(lowEdge);
    timeFrom.value = timeTo.value = "";
    applyFilters();
  });

  // ---------------------------------------------------------------- search
  const haystack = NODES.text.map((text, i) => [
    `#${NODES.id[i]}`, text, ...NODES.themes[i].map((t) => D.themes[t]),
    ...NODES.entities[i].map(entityName), D.emotions[NODES.emotion[i]],
  ].join("\n").toLowerCase());
  function search(query) {
    const q = query.trim().toLowerCase();
    hits = null;
    $("hits").replaceChildren();
    $("hit-count").textContent = "";
    if (q) {
      hits = new Set();
      for (let i = 0; i < N; i++) if (haystack[i].includes(q)) hits.add(i);
      const ranked = [...hits].sort((x, y) => NODES.decay[y] - NODES.decay[x]);
      $("hit-count").textContent = `${hits.size} Treffer`;
      for (const i of ranked.slice(0, 100)) {
        $("hits").append(el("li", { title: NODES.text[i], onclick: () => select(i, true) },
          [`#${NODES.id[i]} ${NODES.label[i]}`]));
      }
    }
    renderer.refresh();
    return hits ? hits.size : 0;
  }
  let searchTimer = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => search($("search").value), 150);
  });

  // ---------------------------------------------------------------- selection
  function focus(i) {
    const shown = renderer.getNodeDisplayData(String(i));
    if (shown) renderer.getCamera().animate({ x: shown.x, y: shown.y, ratio: 0.25 }, { duration: 400 });
  }
  function select(i, moveCamera) {
    if (i < 0) {
      selected = -1;
      selectedNeighbours = new Set();
      $("details").hidden = true;
      renderer.refresh();
      return;
    }
    selected = i;
    selectedNeighbours = new Set(neighbours[i].map((e) => EDGES.a[e] === i ? EDGES.b[e] : EDGES.a[e]));
    showDetails(i);
    renderer.refresh();
    if (moveCamera) focus(i);
  }
  function showDetails(i) {
    const speaker = D.speakers[NODES.speaker[i]].label;
    const facts = [
      ["gewicht_decay", fmt(NODES.decay[i])], ["gewicht_absolut", fmt(NODES.absolut[i])],
      ["häufigkeit", String(NODES.frequency[i])],
      ["Themen", NODES.themes[i].map((t) => D.themes[t]).join(", ") || "–"],
      ["Entitäten", NODES.entities[i].map(entityName).join(", ") || "–"],
      ["Emotion", D.emotions[NODES.emotion[i]] || "–"],
      ["gesagt am", day(NODES.said[i])], ["im LZG seit", day(NODES.stored[i])],
    ];
    const rows = neighbours[i].slice().sort((x, y) => weightOf(y) - weightOf(x));
    const items = rows.slice(0, 300).map((e) => {
      const outgoing = EDGES.a[e] === i;
      const other = outgoing ? EDGES.b[e] : EDGES.a[e];
      const [mine, theirs] = outgoing ? [EDGES.ab[e], EDGES.ba[e]] : [EDGES.ba[e], EDGES.ab[e]];
      const shared = [];
      if (EDGES.entities[e].length) shared.push("Entität " + EDGES.entities[e].map(entityName).join(", "));
      if (EDGES.themes[e].length) shared.push("Thema " + EDGES.themes[e].map((t) => D.themes[t]).join(", "));
      return el("li", { title: NODES.text[other], onclick: () => select(other, true) }, [
        `→ ${fmt(mine)} / ← ${fmt(theirs)} `,
        el("span", { className: "reasons" }, [`[${reasonsOf(edgeMask[e]).join(", ")}]`]),
        ` ${shared.join("; ")} — #${NODES.id[other]} ${NODES.label[other]}`,
        edgeVisible[e] ? "" : " (ausgefiltert)",
      ]);
    });
    const close = el("button", { className: "close", type: "button", title: "schließen", textContent: "×",
      onclick: () => select(-1) });
    $("details").replaceChildren(
      close,
      el("h2", {}, [`#${NODES.id[i]} · ${speaker} · ${NODES.active[i] ? "aktiv" : "inaktiv"}`]),
      el("blockquote", {}, [NODES.text[i]]),
      el("dl", {}, facts.flatMap(([k, v]) => [el("dt", {}, [k]), el("dd", {}, [v])])),
      el("h3", {}, [`${rows.length} Verbindungen (→ von hier / ← hierher, gewicht_absolut)`]),
      el("ol", {}, items),
      rows.length > 300 ? el("p", {}, [`… und ${rows.length - 300} schwächere`]) : "",
    );
    $("details").hidden = false;
  }
  renderer.on("clickNode", ({ node }) => select(+node, false));
  renderer.on("clickStage", () => select(-1));
  renderer.on("enterNode", () => { $("graph").style.cursor = "pointer"; });
  renderer.on("leaveNode", () => { $("graph").style.cursor = ""; });

  const api = {
    ready: false, renderer: renderer, graph: graph, nodeCount: N, edgeCount: E,
    select: (id) => select(byId.has(id) ? byId.get(id) : -1, true),
    selectedNeighbours: () => [...selectedNeighbours].map((i) => NODES.id[i]),
    search: search, applyFilters: applyFilters,
  };
  window.novabergExplorer = api;
  applyFilters(false); // everything visible: the first frame is already drawn
  requestAnimationFrame(() => requestAnimationFrame(() => {
    api.ready = true;
    api.readyAt = performance.now(); // ms since navigation started: the page's load time
    document.body.dataset.ready = "1";
  }));
})();
