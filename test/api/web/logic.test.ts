// The pure rules behind the pages: the widget's configuration, range colours
// and beat; the room display's zones, their contrast and the trend line; the
// maximum heart rate; the widget editor's form parsing.
import t from 'tap'
// @ts-expect-error plain ES module served to the browser, no types
import { normalizeConfig, colorFor, beatSeconds, bpmOf } from '../../../api/web/static/widget-logic.js'
import { zoneOf, trendPoints, ZONE_COLORS } from '../../../api/web/static/zones.js'
import { maxHeartRate, DEFAULT_MAX_HR } from '../../../api/web/zones.ts'
import { parseWidgetForm, editable, DEFAULT_CONFIG } from '../../../api/web/widget-form.ts'
import { parseGameModForm } from '../../../api/web/member-gamemod.ts'
import { parseForm } from '../../../api/oauth/form.ts'
import { jsonBlock } from '../../../api/web/html.ts'

const anyColor = (c: string): boolean => /^(#[0-9a-f]{3,8}|[a-z]+|rgb\(.*\))$/i.test(c)

t.test('widget configuration: valid ranges kept, bad ones dropped, defaults', async t => {
  const cfg = normalizeConfig({
    ranges: [{ from: 0, to: 99, color: '#0f0' }, { from: 100, to: 90, color: 'red' }, { from: 'x', to: 1, color: 'red' }, { from: 100, to: 200, color: 'not a colour!' }, null],
    heartColor: 'blue',
    heartEnabled: false,
    font: 'Inter'
  }, anyColor)
  t.same(cfg, { ranges: [{ from: 0, to: 99, color: '#0f0' }], heartColor: 'blue', textColor: '#ffffff', heartEnabled: false, font: 'Inter' })
  t.same(normalizeConfig('nonsense', anyColor), { ranges: [], heartColor: '#ff2d55', textColor: '#ffffff', heartEnabled: true, font: null })
  t.same(normalizeConfig({ font: 'x'.repeat(201) }, anyColor).font, null)
})

t.test('range colour: inclusive bounds, first match wins, fallback', async t => {
  const ranges = [{ from: 0, to: 99, color: 'green' }, { from: 99, to: 150, color: 'yellow' }, { from: 151, to: 250, color: 'red' }]
  t.equal(colorFor(99, ranges, 'white'), 'green')
  t.equal(colorFor(100, ranges, 'white'), 'yellow')
  t.equal(colorFor(150, ranges, 'white'), 'yellow')
  t.equal(colorFor(151, ranges, 'white'), 'red')
  t.equal(colorFor(251, ranges, 'white'), 'white')
  t.equal(colorFor(150.5, ranges, 'white'), 'white', 'a gap between ranges falls back')
})

t.test('beat duration is 60/bpm seconds, clamped', async t => {
  t.equal(beatSeconds(60), 1)
  t.equal(beatSeconds(120), 0.5)
  t.equal(beatSeconds(72), 0.833)
  t.equal(beatSeconds(5), 3, 'clamped at 20 bpm')
  t.equal(beatSeconds(1000), 0.2, 'clamped at 300 bpm')
})

t.test('stream messages: only the spec shape with a positive bpm counts', async t => {
  t.equal(bpmOf({ measured_at: 1, data: { heart_rate: 72 } }), 72)
  t.equal(bpmOf({ measured_at: 1, data: { heart_rate: 72.6 } }), 73)
  t.equal(bpmOf({ data: { heart_rate: 72 } }), null)
  t.equal(bpmOf({ measured_at: 1, data: { heart_rate: 0 } }), null)
  t.equal(bpmOf({ measured_at: 1, data: { heart_rate: '72' } }), null)
  t.equal(bpmOf(null), null)
})

t.test('zones by percent of max with configurable bounds', async t => {
  t.same(zoneOf(90, 180), { index: 1, percent: 50, name: 'Zone 1 · very light', color: ZONE_COLORS[1] })
  t.equal(zoneOf(89, 180).index, 0)
  t.equal(zoneOf(144, 180).index, 4)
  t.equal(zoneOf(171, 190).index, 5)
  t.equal(zoneOf(200, 190).percent, 105)
  t.equal(zoneOf(120, 200, [40, 55, 65, 75, 85]).index, 2, 'member bounds')
  t.equal(zoneOf(120, 200, [1, 2]).index, 2, 'malformed bounds: the defaults (60 % is zone 2)')
  t.equal(zoneOf(95, 0).percent, 50, 'no max: 190')
})

function luminance (hex: string): number {
  const c = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16) / 255).map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
  return 0.2126 * (c[0] ?? 0) + 0.7152 * (c[1] ?? 0) + 0.0722 * (c[2] ?? 0)
}

t.test('zone colours keep black text above WCAG AAA contrast (7:1)', async t => {
  for (const color of ZONE_COLORS as string[]) {
    const ratio = (luminance(color) + 0.05) / 0.05
    t.ok(ratio >= 7, `${color} against black: ${ratio.toFixed(1)}:1`)
  }
})

t.test('trend line: scaled into the box, nothing for fewer than two samples', async t => {
  const now = 1_000_000
  t.equal(trendPoints([[now, 100]], now, 300_000, 300, 60), '')
  const pts = (trendPoints([[now - 60_000, 100], [now - 30_000, 120], [now, 110]], now, 300_000, 300, 60) as string).split(' ')
  t.same(pts, ['0.0,50.0', '150.0,10.0', '300.0,30.0'], 'bpm 95..125 fills the height')
  t.equal(trendPoints([[now - 400_000, 100], [now - 350_000, 120]], now, 300_000, 300, 60), '', 'outside the window')
})

t.test('maximum heart rate: member config, user setting, 220 - age, default', async t => {
  t.same(maxHeartRate(185, 200, 30), { bpm: 185, source: 'configured' })
  t.same(maxHeartRate(null, 200, 30), { bpm: 200, source: 'configured' })
  t.same(maxHeartRate(null, undefined, 40), { bpm: 180, source: 'age' })
  t.same(maxHeartRate(null, undefined, undefined), { bpm: DEFAULT_MAX_HR, source: 'default' })
  t.equal(DEFAULT_MAX_HR, 190)
})

t.test('widget editor form: parsed, validated, unknown keys kept', async t => {
  const form = parseForm('name=Overlay&range_from_0=0&range_to_0=120&range_color_0=%2300ff00&range_from_1=&range_to_1=&range_color_1=&heart_color=red&heart_enabled=on&font=DejaVu+Sans')
  t.same(parseWidgetForm(form, { customKey: 1, font: 'Old' }), {
    ok: true, name: 'Overlay', config: { customKey: 1, ranges: [{ from: 0, to: 120, color: '#00ff00' }], heartColor: 'red', heartEnabled: true, font: 'DejaVu Sans' }
  })
  const noFont = parseWidgetForm(parseForm('name=A&heart_color=red'), { font: 'Old' })
  t.same(noFont, { ok: true, name: 'A', config: { ranges: [], heartColor: 'red', heartEnabled: false } })
  const cases: Array<[string, string]> = [
    ['name=&heart_color=red', 'The name must be 1 to 100 characters.'],
    ['name=A&heart_color=red&range_from_0=10&range_to_0=5&range_color_0=red', 'Range 1: from and to must be whole numbers with 0 <= from <= to <= 300.'],
    ['name=A&heart_color=red&range_from_2=10&range_color_2=red', 'Range 3: from and to must be whole numbers with 0 <= from <= to <= 300.'],
    ['name=A&heart_color=red&range_from_0=1&range_to_0=5&range_color_0=red%3Bbackground%3Aurl(x)', 'Range 1: the colour must be like #ff0000, red or rgb(255,0,0).'],
    ['name=A&heart_color=expression(alert(1))', 'The heart colour must be like #ff0000, red or rgb(255,0,0).'],
    ['name=A&heart_color=red&font=x%3B%7D', 'The font must be a font family name (letters, digits, spaces, commas, quotes).']
  ]
  for (const [body, error] of cases) t.same(parseWidgetForm(parseForm(body), {}), { ok: false, error }, body)
  t.same(editable({ ranges: [] }).ranges, [], 'no ranges stay none')
  t.same(editable({}).ranges, DEFAULT_CONFIG.ranges, 'a configuration without ranges starts from the defaults')
})

t.test('game-mod form: empty is null, typed values, errors', async t => {
  const ok = parseGameModForm(parseForm('disable_start=true&enable_death=false&death_bpm=180.5&position=top&scale='))
  t.same(ok, { ok: true, config: { disable_start: true, enable_death: false, death_bpm: 180.5, scale: null, position: 'top', custom_x: null, custom_y: null, heart_pos: null, death_pos: null, enable_color_desaturation: null, desaturation_bpm_start: null, desaturation_bpm_end: null } })
  t.same(parseGameModForm(parseForm('death_bpm=abc')), { ok: false, error: 'Death (bpm): enter a number or leave it empty.' })
  t.same(parseGameModForm(parseForm('disable_start=maybe')), { ok: false, error: 'Disable start: choose yes, no or not set.' })
})

t.test('JSON data blocks cannot be closed early', async t => {
  const block = jsonBlock('cfg', { font: '</script><script>alert(1)</script>', sep: '\u2028' })
  t.notMatch(block.slice(0, -'</script>'.length), /<\/script>/i)
  t.equal(block, '<script type="application/json" id="cfg">{"font":"\\u003c/script>\\u003cscript>alert(1)\\u003c/script>","sep":"\\u2028"}</script>')
})

t.test('room display: zone colours of zones.css (the display\'s and the coach page\'s) are ZONE_COLORS; the grid makes the largest tiles', async t => {
  const { readFile } = await import('node:fs/promises')
  const css = await readFile(new URL('../../../api/web/static/zones.css', import.meta.url), 'utf8')
  const rules = [...css.matchAll(/\[data-zone="(\d)"\] \{ --zone: (#[0-9a-f]{6}); \}/g)].map(m => [Number(m[1]), m[2]])
  t.same(rules, (ZONE_COLORS as string[]).map((c, i) => [i, c]))
  const { gridFor } = await import('../../../api/web/static/room-layout.js' as string) as { gridFor: (n: number, w: number, h: number, gap: number) => { cols: number, rows: number } }
  t.same(gridFor(8, 1858, 910, 13), { cols: 4, rows: 2 })
  t.same(gridFor(40, 1858, 910, 13), { cols: 8, rows: 5 })
  t.same(gridFor(1, 1858, 910, 13), { cols: 1, rows: 1 })
  t.same(gridFor(0, 1858, 910, 13), { cols: 1, rows: 1 })
  t.same(gridFor(3, 400, 1200, 10), { cols: 1, rows: 3 }, 'a portrait screen stacks')
})
