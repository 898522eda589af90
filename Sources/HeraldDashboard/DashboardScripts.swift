/// The pages' JavaScript: small ES modules, served from `/assets/`, no build step and no
/// dependency. Each does one thing; the pages work without them except where they are the point
/// (the live feed, the graphs, the browser device).
enum DashboardScripts {
    static let all: [String: String] = [
        "times.js": times,
        "live.js": live,
        "graphs.js": graphs,
        "device.js": BrowserDeviceScript.source,
        "timeline.js": timeline,
        "send-form.js": sendForm,
    ]

    /// The send form: only the fields of the chosen target are shown, and a count stops being
    /// sendable as soon as the form changes (the server refuses it anyway: it recounts).
    static let sendForm = """
        const form = document.getElementById('send-form');
        const target = form?.querySelector('select[name=target]');
        function showTarget() {
          for (const label of form.querySelectorAll('label[data-for]')) label.hidden = !label.dataset.for.split(' ').includes(target.value);
        }
        if (form && target) {
          target.addEventListener('change', showTarget);
          showTarget();
          const send = document.getElementById('send');
          const count = document.getElementById('recipient-count');
          form.addEventListener('input', () => {
            if (!send || send.disabled) return;
            send.disabled = true;
            if (count) count.textContent = 'The form changed since the count: count the recipients again.';
          });
        }

        """

    /// Every `<time data-ms>` shown in the reader's own time zone (the server wrote UTC).
    static let times = """
        for (const element of document.querySelectorAll('time[data-ms]')) {
          const ms = Number(element.dataset.ms);
          if (!Number.isFinite(ms) || ms <= 0) continue;
          const date = new Date(ms);
          element.dateTime = date.toISOString();
          element.title = element.textContent;
          element.textContent = date.toLocaleString();
        }

        """

    /// The live feed: `GET /v1/events` as server-sent events, newest row first.
    static let live = """
        const rows = document.getElementById('event-rows');
        const state = document.getElementById('live-state');
        const form = document.getElementById('live-filter');
        const topicInput = document.getElementById('live-topic');
        const keep = 500;
        let source = null;

        function cell(row, text, mono) {
          const td = row.insertCell();
          td.textContent = text ?? '';
          if (mono) td.className = 'mono';
          return td;
        }

        function show(event) {
          const row = rows.insertRow(0);
          row.dataset.event = event.event;
          if (event.apnsId) row.dataset.apnsId = event.apnsId;
          cell(row, new Date(event.at).toLocaleTimeString());
          const kind = cell(row, event.event);
          kind.className = 'status-' + event.event;
          cell(row, event.apnsId, true);
          cell(row, event.topic);
          cell(row, event.device, true);
          const detail = event.event === 'dropped' ? `${event.count} events lost (this page read too slowly)`
            : event.outcome ?? (event.status ? `${event.status} ${event.reason ?? ''} ${event.why ?? ''}` : '');
          cell(row, detail);
          while (rows.rows.length > keep) rows.deleteRow(rows.rows.length - 1);
        }

        function watch(topic) {
          if (source) source.close();
          const query = topic ? '?topic=' + encodeURIComponent(topic) : '';
          source = new EventSource('/v1/events' + query);
          source.onopen = () => { state.textContent = topic ? `watching ${topic}` : 'watching all topics'; state.dataset.state = 'open'; };
          source.onerror = () => { state.textContent = 'disconnected; retrying'; state.dataset.state = 'retrying'; };
          source.onmessage = (message) => {
            try { show(JSON.parse(message.data)); } catch (error) { console.warn('not an event', message.data); }
          };
        }

        form.addEventListener('submit', (event) => { event.preventDefault(); watch(topicInput.value.trim()); });
        watch('');

        """

    /// Throughput and latency graphs from the gateway's own Prometheus text, read every 2 s:
    /// rates of counters, and p50/p99 of histograms over each interval (from the buckets' deltas).
    static let graphs = """
        const colors = ['#0a64c8', '#1a7f37', '#c62828', '#a15c00'];
        const samples = 90;
        const history = new Map();
        let previous = null;

        function parse(text) {
          const values = new Map();
          for (const line of text.split('\\n')) {
            if (!line || line.startsWith('#')) continue;
            const space = line.lastIndexOf(' ');
            const key = line.slice(0, space);
            const value = Number(line.slice(space + 1));
            if (!Number.isFinite(value)) continue;
            values.set(key, (values.get(key) ?? 0) + value);
          }
          return values;
        }

        function counter(values, name) {
          let total = 0;
          for (const [key, value] of values) if (key === name || key.startsWith(name + '{')) total += value;
          return total;
        }

        function buckets(values, name) {
          const result = [];
          for (const [key, value] of values) {
            if (!key.startsWith(name + '_bucket{')) continue;
            const match = /le="([^"]+)"/.exec(key);
            if (match) result.push([match[1] === '+Inf' ? Infinity : Number(match[1]), value]);
          }
          return result.sort((a, b) => a[0] - b[0]);
        }

        function quantile(now, before, q) {
          const deltas = now.map(([le, count], index) => [le, count - (before[index]?.[1] ?? 0)]);
          const total = deltas.length ? deltas[deltas.length - 1][1] : 0;
          if (total <= 0) return null;
          const rank = q * total;
          let lower = 0, lowerCount = 0;
          for (const [le, count] of deltas) {
            if (count >= rank) {
              if (le === Infinity) return lower * 1000;
              const share = count === lowerCount ? 1 : (rank - lowerCount) / (count - lowerCount);
              return (lower + (le - lower) * share) * 1000;
            }
            lower = le; lowerCount = count;
          }
          return null;
        }

        function push(id, index, value) {
          const key = id + '/' + index;
          const list = history.get(key) ?? [];
          list.push(value);
          while (list.length > samples) list.shift();
          history.set(key, list);
        }

        function draw(canvas, series, labels, unit) {
          const context = canvas.getContext('2d');
          const width = canvas.width = canvas.clientWidth * devicePixelRatio;
          const height = canvas.height = canvas.clientHeight * devicePixelRatio;
          context.clearRect(0, 0, width, height);
          const lists = series.map((_, index) => history.get(canvas.id + '/' + index) ?? []);
          const top = Math.max(1, ...lists.flat().filter((v) => v !== null));
          context.font = `${11 * devicePixelRatio}px system-ui`;
          context.fillStyle = '#6e6e73';
          context.fillText(`${top.toFixed(top < 10 ? 1 : 0)} ${unit}`, 6, 14 * devicePixelRatio);
          lists.forEach((list, index) => {
            context.strokeStyle = colors[index % colors.length];
            context.lineWidth = 2 * devicePixelRatio;
            context.beginPath();
            let started = false;
            list.forEach((value, at) => {
              if (value === null) { started = false; return; }
              const x = width - (list.length - 1 - at) * (width / (samples - 1));
              const y = height - 4 - (value / top) * (height - 24 * devicePixelRatio);
              if (started) context.lineTo(x, y); else context.moveTo(x, y);
              started = true;
            });
            context.stroke();
          });
          const legend = document.getElementById(canvas.id + '-legend');
          legend.replaceChildren(...labels.map((label, index) => {
            const span = document.createElement('span');
            const swatch = document.createElement('i');
            swatch.style.background = colors[index % colors.length];
            const last = lists[index][lists[index].length - 1];
            span.append(swatch, `${label}: ${last === null || last === undefined ? '–' : last.toFixed(1)}`);
            span.dataset.label = label;
            span.dataset.value = last ?? '';
            return span;
          }));
        }

        async function sample() {
          let text;
          try { text = await (await fetch('/metrics', { cache: 'no-store' })).text(); } catch { return; }
          const now = { at: performance.now(), values: parse(text) };
          for (const canvas of document.querySelectorAll('canvas.graph')) {
            const labels = canvas.dataset.labels.split(',');
            if (canvas.dataset.series) {
              const names = canvas.dataset.series.split(',');
              names.forEach((name, index) => {
                const rate = previous ? (counter(now.values, name) - counter(previous.values, name)) / ((now.at - previous.at) / 1000) : null;
                push(canvas.id, index, rate === null ? null : Math.max(0, rate));
              });
              draw(canvas, names, labels, '/s');
            } else {
              const names = canvas.dataset.histograms.split(',');
              names.forEach((name, index) => {
                const nowBuckets = buckets(now.values, name);
                const beforeBuckets = previous ? buckets(previous.values, name) : nowBuckets.map(([le]) => [le, 0]);
                push(canvas.id, index * 2, quantile(nowBuckets, beforeBuckets, 0.5));
                push(canvas.id, index * 2 + 1, quantile(nowBuckets, beforeBuckets, 0.99));
              });
              draw(canvas, labels, labels, 'ms');
            }
          }
          previous = now;
          document.body.dataset.samples = String(Number(document.body.dataset.samples ?? 0) + 1);
        }

        sample();
        setInterval(sample, 2000);

        """

    /// The provider's schedules: each zone's next occurrences as ticks on a shared time axis.
    static let timeline = """
        for (const chart of document.querySelectorAll('[data-timeline]')) {
          const from = Number(chart.dataset.from), to = Number(chart.dataset.to);
          if (!(to > from)) continue;
          for (const tick of chart.querySelectorAll('.tick[data-ms]')) {
            const share = (Number(tick.dataset.ms) - from) / (to - from);
            tick.style.left = `calc(${(Math.min(1, Math.max(0, share)) * 100).toFixed(2)}% - 1px)`;
            tick.title = new Date(Number(tick.dataset.ms)).toLocaleString();
          }
        }

        """
}
