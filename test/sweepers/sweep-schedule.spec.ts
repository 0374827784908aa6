import {
  describeValidSweepIntervals,
  sweepCronExpression,
  sweepWindow,
  VALID_SWEEP_INTERVALS_MS,
} from '../../lib/sweepers/sweep-schedule';

describe('sweep schedule', () => {
  it('maps intervals that divide a minute to every-N-seconds crons', () => {
    expect(sweepCronExpression(1_000)).toBe('*/1 * * * * *');
    expect(sweepCronExpression(5_000)).toBe('*/5 * * * * *');
    expect(sweepCronExpression(30_000)).toBe('*/30 * * * * *');
  });

  it('maps intervals that divide an hour to every-N-minutes crons, and 60 minutes to hourly', () => {
    expect(sweepCronExpression(60_000)).toBe('0 */1 * * * *');
    expect(sweepCronExpression(300_000)).toBe('0 */5 * * * *');
    expect(sweepCronExpression(1_800_000)).toBe('0 */30 * * * *');
    expect(sweepCronExpression(3_600_000)).toBe('0 0 * * * *');
  });

  it('refuses intervals that do not align to the clock', () => {
    for (const ms of [500, 1_500, 7_000, 45_000, 90_000, 420_000, 7_200_000]) {
      expect(sweepCronExpression(ms)).toBeUndefined();
    }
    expect(VALID_SWEEP_INTERVALS_MS).toHaveLength(23);
    expect(describeValidSweepIntervals()).toBe(
      '1s, 2s, 3s, 4s, 5s, 6s, 10s, 12s, 15s, 20s, 30s, ' +
        '1min, 2min, 3min, 4min, 5min, 6min, 10min, 12min, 15min, 20min, 30min, 60min',
    );
  });

  it('puts ticks a little early or late in the same window', () => {
    const tick = 1_700_000_010_000; // a multiple of 10 s
    expect(sweepWindow(tick - 40, 10_000)).toBe(sweepWindow(tick + 40, 10_000));
    expect(sweepWindow(tick + 10_000, 10_000)).toBe(sweepWindow(tick, 10_000) + 1);
  });
});
