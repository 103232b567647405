package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

import org.junit.jupiter.api.Test;

/** The soak's rules on made-up samples: each rule can fail, and a short run reports what it cannot judge. */
class SoakReportTest {
    /** One sample a minute for {@code minutes}, {@code at(i)} giving sample i. */
    private static List<Soak.Sample> samples(int minutes, IntFunction<Soak.Sample> at) {
        List<Soak.Sample> l = new ArrayList<>();
        for (int i = 1; i <= minutes; i++) {
            l.add(at.apply(i));
        }
        return l;
    }

    private static Soak.Sample flat(int i) {
        return sample(i, 400_000, 20_000, 21, 10, 80 + (i % 3));
    }

    private static Soak.Sample sample(double minute, long rssKiB, long otherKiB, int fds, int threads, double p99) {
        return new Soak.Sample(minute, rssKiB, 0, 370_000, fds, threads, 1000L * (long) minute, (long) (minute * 6), 0, 20, p99,
                Map.of("Other", otherKiB, "Total", 370_000L));
    }

    private static SoakReport.Verdict rule(SoakReport r, String start) {
        return r.verdicts.stream().filter(v -> v.what().startsWith(start)).findFirst().orElseThrow();
    }

    @Test
    void aFlatLongRunPasses() {
        SoakReport r = new SoakReport("tcp", samples(30, SoakReportTest::flat), Map.of(), 5);
        assertTrue(r.passed(), r.verdicts.toString());
        assertTrue(r.verdicts.stream().allMatch(SoakReport.Verdict::judged), "30 minutes: every rule judged");
    }

    @Test
    void eachRuleFailsOnItsOwn() {
        // RSS: 2 MiB an hour more.
        SoakReport rss = new SoakReport("tcp", samples(30, i -> sample(i, 400_000 + i * 2048L / 60, 20_000, 21, 10, 80)), Map.of(), 5);
        assertFalse(rule(rss, "RSS").pass(), rss.verdicts.toString());
        // FFM arenas: 2 MiB an hour more.
        SoakReport other = new SoakReport("tcp", samples(30, i -> sample(i, 400_000, 20_000 + i * 2048L / 60, 21, 10, 80)), Map.of(), 5);
        assertFalse(rule(other, "malloc'd").pass(), other.verdicts.toString());
        // A descriptor more in the second half.
        SoakReport fds = new SoakReport("tcp", samples(30, i -> sample(i, 400_000, 20_000, i > 20 ? 22 : 21, 10, 80)), Map.of(), 5);
        assertFalse(rule(fds, "file descriptors").pass());
        SoakReport threads = new SoakReport("tcp", samples(30, i -> sample(i, 400_000, 20_000, 21, i > 20 ? 11 : 10, 80)), Map.of(), 5);
        assertFalse(rule(threads, "threads").pass());
        // p99 up 20 % in the second half.
        SoakReport p99 = new SoakReport("tcp", samples(30, i -> sample(i, 400_000, 20_000, 21, 10, i > 17 ? 96 : 80)), Map.of(), 5);
        assertFalse(rule(p99, "p99").pass(), p99.verdicts.toString());
        SoakReport errors = new SoakReport("tcp", samples(30, SoakReportTest::flat), Map.of("checksum", 1L), 5);
        assertFalse(rule(errors, "errors").pass());
        for (SoakReport r : List.of(rss, other, fds, threads, p99, errors)) {
            assertFalse(r.passed());
            assertEquals(1, r.verdicts.stream().filter(v -> !v.pass()).count(), "one rule broken: " + r.verdicts);
        }
    }

    @Test
    void theWarmUpLastsUntilEveryKindOfWorkRanOnce() {
        // The emulated CPU's pace: the fifth cycle (the first lease, which starts the lease timer's
        // thread) at sample 13, in the second half of the samples after the one-minute warm-up (7 to 18).
        List<Soak.Sample> slow = new ArrayList<>();
        for (int i = 1; i <= 18; i++) {
            int cycles = Math.max(1, i - 8);
            slow.add(new Soak.Sample(i / 6.0, 380_000, 0, 370_000, 16, cycles >= 5 ? 10 : 9, 834L * cycles, cycles, 0, 20, 900,
                    Map.of("Other", 20_000L, "Total", 370_000L)));
        }
        SoakReport r = new SoakReport("verbs", slow, Map.of(), 1);
        assertTrue(rule(r, "threads").pass(), r.verdicts.toString());
        assertTrue(r.passed(), r.verdicts.toString());
        // A thread that comes later than that is still a failure.
        List<Soak.Sample> late = slow.stream().map(x -> x.minutes() > 2.5 ? new Soak.Sample(x.minutes(), x.rssKiB(), 0, x.nativeKiB(),
                x.fds(), 11, x.operations(), x.cycles(), 0, 20, 900, x.nmtKiB()) : x).toList();
        assertFalse(rule(new SoakReport("verbs", late, Map.of(), 1), "threads").pass());
    }

    @Test
    void aShortRunReportsRssAndDriftWithoutJudgingThem() {
        List<Soak.Sample> s = new ArrayList<>();
        for (int i = 1; i <= 18; i++) {   // 3 minutes, every 10 s; RSS and p99 move as a warming JVM's do
            s.add(sample(i / 6.0, 380_000 + i * 100L, 20_000, 21, 10, i > 9 ? 100 : 80));
        }
        SoakReport r = new SoakReport("tcp", s, Map.of(), 1);
        assertTrue(r.passed(), r.verdicts.toString());
        assertFalse(rule(r, "RSS").judged());
        assertFalse(rule(r, "p99").judged());
        assertTrue(rule(r, "malloc'd").judged() && rule(r, "file descriptors").judged());
        assertTrue(r.markdown("x.svg", 1, 3).contains("not judged"));
        assertTrue(r.svg().startsWith("<svg"));
    }
}
