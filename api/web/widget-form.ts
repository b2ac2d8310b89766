// The widget configuration editor: the basic bpm widget's keys as form
// fields (up to five colour ranges, heart colour, heart on/off, font), and the
// parsing back into a configuration. Keys the editor does not know are kept.
import type { FormParams } from '../oauth/form.ts'
import { esc, field, hidden } from './html.ts'
import { one } from './guard.ts'

export const RANGE_ROWS = 5
const COLOR_RE = /^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,30}|rgba?\(\s*[0-9.]+%?\s*,\s*[0-9.]+%?\s*,\s*[0-9.]+%?\s*(,\s*[0-9.]+\s*)?\))$/
const FONT_RE = /^[A-Za-z0-9 ,'"-]{1,100}$/

export interface Range { from: number, to: number, color: string }
export interface EditableConfig { ranges: Range[], heartColor: string, heartEnabled: boolean, font: string }

export const DEFAULT_CONFIG: EditableConfig = {
  ranges: [{ from: 0, to: 99, color: '#ffffff' }, { from: 100, to: 139, color: '#ffd60a' }, { from: 140, to: 250, color: '#ff453a' }],
  heartColor: '#ff2d55',
  heartEnabled: true,
  font: ''
}

function obj (v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {}
}

/** The editable view of a stored configuration (missing keys: defaults). */
export function editable (configuration: unknown): EditableConfig {
  const c = obj(configuration)
  const ranges = Array.isArray(c.ranges)
    ? c.ranges.map(obj).filter(r => typeof r.from === 'number' && typeof r.to === 'number' && typeof r.color === 'string')
      .map(r => ({ from: r.from as number, to: r.to as number, color: r.color as string }))
    : DEFAULT_CONFIG.ranges
  return {
    ranges,
    heartColor: typeof c.heartColor === 'string' ? c.heartColor : DEFAULT_CONFIG.heartColor,
    heartEnabled: c.heartEnabled !== false,
    font: typeof c.font === 'string' ? c.font : ''
  }
}

export type Parsed = { ok: true, config: Record<string, unknown>, name: string } | { ok: false, error: string }

/** Reads the editor's fields; `previous` keys the editor does not know are kept. */
export function parseWidgetForm (form: FormParams, previous: unknown): Parsed {
  const name = one(form, 'name').trim()
  if (name.length === 0 || name.length > 100) return { ok: false, error: 'The name must be 1 to 100 characters.' }
  const ranges: Range[] = []
  for (let i = 0; i < RANGE_ROWS; i++) {
    const from = one(form, `range_from_${i}`).trim()
    const to = one(form, `range_to_${i}`).trim()
    const color = one(form, `range_color_${i}`).trim()
    if (from === '' && to === '' && color === '') continue
    const f = Number(from)
    const t = Number(to)
    if (from === '' || to === '' || !Number.isInteger(f) || !Number.isInteger(t) || f < 0 || t > 300 || f > t) {
      return { ok: false, error: `Range ${i + 1}: from and to must be whole numbers with 0 <= from <= to <= 300.` }
    }
    if (!COLOR_RE.test(color)) return { ok: false, error: `Range ${i + 1}: the colour must be like #ff0000, red or rgb(255,0,0).` }
    ranges.push({ from: f, to: t, color })
  }
  const heartColor = one(form, 'heart_color').trim()
  if (!COLOR_RE.test(heartColor)) return { ok: false, error: 'The heart colour must be like #ff0000, red or rgb(255,0,0).' }
  const font = one(form, 'font').trim()
  if (font !== '' && !FONT_RE.test(font)) return { ok: false, error: 'The font must be a font family name (letters, digits, spaces, commas, quotes).' }
  const config: Record<string, unknown> = { ...obj(previous), ranges, heartColor, heartEnabled: one(form, 'heart_enabled') === 'on' }
  if (font === '') delete config.font
  else config.font = font
  return { ok: true, config, name }
}

/** The editor's fields for a configuration; `prefix` keeps ids unique when several editors share a page. */
export function widgetFields (prefix: string, name: string, c: EditableConfig): string {
  const id = (s: string): string => `${prefix}-${s}`
  const rows: string[] = []
  for (let i = 0; i < RANGE_ROWS; i++) {
    const r = c.ranges[i]
    rows.push(`<tr><th scope="row">${i + 1}</th>
<td><input type="number" id="${id(`from-${i}`)}" name="range_from_${i}" min="0" max="300" aria-label="Range ${i + 1} from (bpm)" value="${esc(r?.from ?? '')}"></td>
<td><input type="number" id="${id(`to-${i}`)}" name="range_to_${i}" min="0" max="300" aria-label="Range ${i + 1} to (bpm)" value="${esc(r?.to ?? '')}"></td>
<td><input type="text" id="${id(`color-${i}`)}" name="range_color_${i}" maxlength="40" aria-label="Range ${i + 1} colour" value="${esc(r?.color ?? '')}"></td></tr>`)
  }
  return `${field(id('name'), 'Name', `<input type="text" id="${id('name')}" name="name" required maxlength="100" value="${esc(name)}">`)}
<table><caption>Colour ranges (bpm from and to, inclusive; the first match wins; leave a row empty to drop it)</caption>
<thead><tr><th scope="col">#</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Colour</th></tr></thead><tbody>${rows.join('\n')}</tbody></table>
${field(id('heart-color'), 'Heart colour', `<input type="text" id="${id('heart-color')}" name="heart_color" required maxlength="40" value="${esc(c.heartColor)}">`)}
<div class="field"><input type="checkbox" id="${id('heart-enabled')}" name="heart_enabled"${c.heartEnabled ? ' checked' : ''}> <label for="${id('heart-enabled')}" class="inline">Show the beating heart</label></div>
${field(id('font'), 'Font family (optional, must be installed where the overlay runs)', `<input type="text" id="${id('font')}" name="font" maxlength="100" value="${esc(c.font)}">`)}`
}

export { hidden }
