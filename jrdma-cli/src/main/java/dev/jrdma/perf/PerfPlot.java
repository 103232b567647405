package dev.jrdma.perf;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;

/**
 * {@code jrdma perf --plot FILE.png}: the results drawn. Latency tests: the percentiles (p50,
 * p99, p99.9, max) against message size on log-log axes, or for one size a bar per statistic
 * (min, p50, p99, p99.9, max). Bandwidth tests: average and peak MB/s against size (log x), or
 * two bars for one size. Headless AWT, no dependency.
 */
final class PerfPlot {
    private static final int W = 760, H = 460, LEFT = 80, RIGHT = 150, TOP = 50, BOTTOM = 60;
    private static final Color[] COLORS = {new Color(0x4c72b0), new Color(0xdd8452), new Color(0x55a868),
        new Color(0xc44e52), new Color(0x8172b3)};

    private PerfPlot() {
    }

    static void write(Path png, PerfOptions o, String provider, List<PerfClient.Result> results) throws IOException {
        if (results.isEmpty()) {
            throw new IllegalArgumentException("no results to plot");
        }
        String title = o.test().perftestName() + " on " + provider + " (jrdma perf, " + o.iterations() + " iterations per size)";
        BufferedImage img;
        if (o.test().latency()) {
            if (results.size() == 1) {
                LatencyStats s = results.get(0).latency();
                img = bars(title + ", " + results.get(0).bytes() + " B", "us",
                        List.of("min", "p50", "p99", "p99.9", "max"), new double[] {s.min(), s.p50(), s.p99(), s.p999(), s.max()});
            } else {
                Map<String, double[]> series = new LinkedHashMap<>();
                series.put("p50", results.stream().mapToDouble(r -> r.latency().p50()).toArray());
                series.put("p99", results.stream().mapToDouble(r -> r.latency().p99()).toArray());
                series.put("p99.9", results.stream().mapToDouble(r -> r.latency().p999()).toArray());
                series.put("max", results.stream().mapToDouble(r -> r.latency().max()).toArray());
                img = lines(title, "latency (us, log)", sizes(results), series, true);
            }
        } else if (results.size() == 1) {
            PerfClient.Result r = results.get(0);
            img = bars(title + ", " + r.bytes() + " B", "MB/s", List.of("average", "peak"), new double[] {r.avgMBps(), r.peakMBps()});
        } else {
            Map<String, double[]> series = new LinkedHashMap<>();
            series.put("average", results.stream().mapToDouble(PerfClient.Result::avgMBps).toArray());
            series.put("peak", results.stream().mapToDouble(PerfClient.Result::peakMBps).toArray());
            img = lines(title, "bandwidth (MB/s)", sizes(results), series, false);
        }
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            java.nio.file.Files.createDirectories(parent);
        }
        if (!ImageIO.write(img, "png", png.toFile())) {
            throw new IOException("no PNG writer in this JDK");
        }
    }

    private static double[] sizes(List<PerfClient.Result> results) {
        return results.stream().mapToDouble(PerfClient.Result::bytes).toArray();
    }

    private static Graphics2D canvas(BufferedImage img, String title) {
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, img.getWidth(), img.getHeight());
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 13));
        g.drawString(title, 15, 22);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        g.drawLine(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM);
        g.drawLine(LEFT, H - BOTTOM, LEFT, TOP);
        return g;
    }

    static BufferedImage bars(String title, String unit, List<String> labels, double[] values) {
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        double max = 0;
        for (double v : values) {
            if (Double.isFinite(v)) {
                max = Math.max(max, v);
            }
        }
        double min = Double.MAX_VALUE;
        for (double v : values) {
            if (Double.isFinite(v) && v > 0) {
                min = Math.min(min, v);
            }
        }
        // Latency tails span decades: on a linear axis min and p50 would be invisible next to max.
        boolean log = max > 0 && min < Double.MAX_VALUE && max / min > 100;
        double yMin = log ? Math.pow(10, Math.floor(Math.log10(min))) : 0;
        max = max <= 0 ? 1 : log ? Math.pow(10, Math.ceil(Math.log10(max * 1.01))) : max * 1.15;
        yTicks(g, yMin, max, log, log ? unit + " (log)" : unit);
        int slot = (W - RIGHT - LEFT) / labels.size();
        for (int i = 0; i < labels.size(); i++) {
            int x = LEFT + i * slot + slot / 5;
            g.setColor(Color.BLACK);
            g.drawString(labels.get(i), x, H - BOTTOM + 16);
            if (!Double.isFinite(values[i])) {
                continue;
            }
            double frac = log ? (Math.log(Math.max(values[i], yMin)) - Math.log(yMin)) / (Math.log(max) - Math.log(yMin))
                    : values[i] / max;
            int bh = Math.max(1, (int) ((H - BOTTOM - TOP) * frac));
            g.setColor(COLORS[i % COLORS.length]);
            g.fillRect(x, H - BOTTOM - bh, slot * 3 / 5, bh);
            g.setColor(Color.BLACK);
            g.drawString(number(values[i]), x, H - BOTTOM - bh - 4);
        }
        g.dispose();
        return img;
    }

    static BufferedImage lines(String title, String yLabel, double[] xs, Map<String, double[]> series, boolean logY) {
        return lines(title, yLabel, xs, series, logY, java.util.Set.of());
    }

    /** As {@link #lines(String, String, double[], Map, boolean)}; the series named in {@code dashed} are drawn dashed. */
    static BufferedImage lines(String title, String yLabel, double[] xs, Map<String, double[]> series, boolean logY,
                               java.util.Set<String> dashed) {
        return lines(title, yLabel, xs, series, logY, dashed, "message size (log)");
    }

    /** As above, with the x axis named {@code xLabel} (its values still on a log scale). */
    static BufferedImage lines(String title, String yLabel, double[] xs, Map<String, double[]> series, boolean logY,
                               java.util.Set<String> dashed, String xLabel) {
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        double lo = Double.MAX_VALUE, hi = 0;
        for (double[] ys : series.values()) {
            for (double y : ys) {
                if (Double.isFinite(y) && y > 0) {
                    lo = Math.min(lo, y);
                    hi = Math.max(hi, y);
                }
            }
        }
        if (hi <= 0) {
            lo = 1;
            hi = 10;
        }
        double yMin = logY ? Math.pow(10, Math.floor(Math.log10(lo))) : 0;
        double yMax = logY ? Math.pow(10, Math.ceil(Math.log10(hi * 1.01))) : hi * 1.15;
        yTicks(g, yMin, yMax, logY, yLabel);
        double xMin = Math.log(xs[0]), xMax = Math.log(xs[xs.length - 1]);
        if (xMax <= xMin) {
            xMax = xMin + 1;
        }
        int plotW = W - RIGHT - LEFT, plotH = H - BOTTOM - TOP;
        for (int i = 0; i < xs.length; i++) {
            int x = LEFT + (int) (plotW * (Math.log(xs[i]) - xMin) / (xMax - xMin));
            if (xs.length <= 12 || i % 2 == 0) {
                g.setColor(Color.BLACK);
                g.drawString(size((long) xs[i]), x - 10, H - BOTTOM + 16);
            }
        }
        g.drawString(xLabel, LEFT + plotW / 2 - 40, H - BOTTOM + 36);
        int k = 0, colour = 0;
        for (Map.Entry<String, double[]> e : series.entrySet()) {
            // A dashed series takes the colour of the solid one before it: the same test, the other tool.
            boolean dash = dashed.contains(e.getKey());
            Color c = COLORS[(dash && colour > 0 ? colour - 1 : colour++) % COLORS.length];
            g.setColor(c);
            g.setStroke(dash ? new BasicStroke(2, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {7, 5}, 0)
                    : new BasicStroke(2));
            List<int[]> points = new ArrayList<>();
            double[] ys = e.getValue();
            for (int i = 0; i < xs.length; i++) {
                if (!Double.isFinite(ys[i]) || (logY && ys[i] <= 0)) {
                    continue;
                }
                int x = LEFT + (int) (plotW * (Math.log(xs[i]) - xMin) / (xMax - xMin));
                double f = logY ? (Math.log(ys[i]) - Math.log(yMin)) / (Math.log(yMax) - Math.log(yMin)) : (ys[i] - yMin) / (yMax - yMin);
                points.add(new int[] {x, H - BOTTOM - (int) (plotH * f)});
            }
            for (int i = 0; i < points.size(); i++) {
                int[] p = points.get(i);
                g.fillOval(p[0] - 3, p[1] - 3, 6, 6);
                if (i > 0) {
                    int[] q = points.get(i - 1);
                    g.drawLine(q[0], q[1], p[0], p[1]);
                }
            }
            g.drawLine(W - RIGHT + 10, TOP + 18 * k + 6, W - RIGHT + 32, TOP + 18 * k + 6);
            g.setStroke(new BasicStroke(1));
            g.setColor(Color.BLACK);
            g.drawString(e.getKey(), W - RIGHT + 38, TOP + 18 * k + 11);
            k++;
        }
        g.dispose();
        return img;
    }

    /**
     * Groups of bars on a log axis: one group per label, one bar per series name (its values
     * in {@code groups}, NaN for none). For latency tails that span decades.
     */
    static BufferedImage groupedBars(String title, String unit, List<String> labels, List<String> names, List<double[]> groups) {
        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = canvas(img, title);
        double lo = Double.MAX_VALUE, hi = 0;
        for (double[] v : groups) {
            for (double x : v) {
                if (Double.isFinite(x) && x > 0) {
                    lo = Math.min(lo, x);
                    hi = Math.max(hi, x);
                }
            }
        }
        if (hi <= 0) {
            lo = 1;
            hi = 10;
        }
        double yMin = Math.pow(10, Math.floor(Math.log10(lo))), yMax = Math.pow(10, Math.ceil(Math.log10(hi * 1.01)));
        yTicks(g, yMin, yMax, true, unit);
        int plotW = W - RIGHT - LEFT, plotH = H - BOTTOM - TOP;
        int slot = plotW / Math.max(1, labels.size()), bar = Math.max(2, slot * 4 / 5 / Math.max(1, names.size()));
        Color[] shades = new Color[names.size()];
        for (int n = 0; n < names.size(); n++) {
            // Two tools of three statistics each: one hue per tool, lighter for the further tail.
            Color base = COLORS[(n / 3) % COLORS.length];
            float f = 1f - 0.3f * (n % 3);
            shades[n] = new Color((int) (255 - (255 - base.getRed()) * f), (int) (255 - (255 - base.getGreen()) * f),
                    (int) (255 - (255 - base.getBlue()) * f));
        }
        for (int i = 0; i < labels.size(); i++) {
            int x0 = LEFT + i * slot + slot / 10;
            g.setColor(Color.BLACK);
            g.drawString(labels.get(i), x0, H - BOTTOM + 16);
            double[] v = groups.get(i);
            for (int n = 0; n < names.size() && n < v.length; n++) {
                if (!Double.isFinite(v[n]) || v[n] <= 0) {
                    continue;
                }
                double frac = (Math.log(Math.max(v[n], yMin)) - Math.log(yMin)) / (Math.log(yMax) - Math.log(yMin));
                int bh = Math.max(1, (int) (plotH * frac));
                g.setColor(shades[n]);
                g.fillRect(x0 + n * bar, H - BOTTOM - bh, bar - 1, bh);
            }
        }
        for (int n = 0; n < names.size(); n++) {
            g.setColor(shades[n]);
            g.fillRect(W - RIGHT + 10, TOP + 18 * n, 12, 12);
            g.setColor(Color.BLACK);
            g.drawString(names.get(n), W - RIGHT + 28, TOP + 18 * n + 11);
        }
        g.dispose();
        return img;
    }

    private static void yTicks(Graphics2D g, double min, double max, boolean log, String label) {
        g.setColor(Color.BLACK);
        int plotH = H - BOTTOM - TOP;
        if (log) {
            for (double v = min; v <= max * 1.0001; v *= 10) {
                int y = H - BOTTOM - (int) (plotH * (Math.log(v) - Math.log(min)) / (Math.log(max) - Math.log(min)));
                g.drawString(number(v), 8, y + 4);
                g.setColor(new Color(0xdddddd));
                g.drawLine(LEFT + 1, y, W - RIGHT, y);
                g.setColor(Color.BLACK);
            }
        } else {
            for (int t = 0; t <= 4; t++) {
                double v = min + (max - min) * t / 4;
                int y = H - BOTTOM - plotH * t / 4;
                g.drawString(number(v), 8, y + 4);
            }
        }
        g.drawString(label, 8, TOP - 10);
    }

    private static String number(double v) {
        return String.format(Locale.ROOT, v >= 100 ? "%.0f" : v >= 1 ? "%.2f" : "%.3f", v);
    }

    private static String size(long b) {
        return b >= 1 << 20 ? (b >> 20) + "M" : b >= 1024 ? (b >> 10) + "K" : b + "";
    }
}
