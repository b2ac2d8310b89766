// The maximum heart rate of a room member, on the server: the room's member
// config, else the user's own setting, else 220 - age, else DEFAULT_MAX_HR.
// The display page gets the result; static/zones.js maps bpm to a zone.

export const DEFAULT_MAX_HR = 190

export interface MaxHeartRate { bpm: number, source: 'configured' | 'age' | 'default' }

export function maxHeartRate (memberMax: number | null | undefined, userMax: number | undefined, age: number | undefined): MaxHeartRate {
  if (typeof memberMax === 'number' && memberMax > 0) return { bpm: memberMax, source: 'configured' }
  if (typeof userMax === 'number' && userMax > 0) return { bpm: userMax, source: 'configured' }
  if (typeof age === 'number' && age > 0 && age < 130) return { bpm: 220 - age, source: 'age' }
  return { bpm: DEFAULT_MAX_HR, source: 'default' }
}
