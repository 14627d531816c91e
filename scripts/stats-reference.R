#!/usr/bin/env Rscript
# stats-reference.R: reference outputs from R for the stats package.
#
# Why: the arithmetic behind cnibench's verdicts (stats.ComparePaired,
# stats.CompareUnpaired, stats.Describe, stats.BenjaminiHochberg and the
# growth fits) is checked against an independent implementation, R, on
# fixed inputs: ties, n = 5/6/10/20, unequal sizes, zeros, equal columns,
# constant ratios, negative and large effects (issue 28). This script holds
# the inputs and writes them, with R's answers, to
# stats/testdata/reference.json; stats/reference_test.go compares the Go
# code with that file, so the tests need no R.
#
# Rerun (where R is installed, e.g. apt-get install r-base-core) after
# changing an input set or to check against another R version:
#   ./scripts/stats-reference.R            # or Rscript scripts/stats-reference.R
# The output is deterministic: a rerun gives a byte-identical file but for
# the "generated" date (set SOURCE_DATE_EPOCH to pin it) and, on another R
# version, the "tool" line. Seeded sets use set.seed + rnorm, rounded to
# integers, and their values are written to the file, so the tests never
# depend on R's generator.
#
# What is computed, per set. d = log(b/a) per round: 0 where a == b, and
# +-Inf where one side is 0 (a round that delivered nothing). Unpaired sets
# work on log(a), log(b), -Inf for a 0.
#   paired    t.test(d): mean, 95% conf.int, p (finite d; where R says "data
#             are essentially constant" or t = 0/0, only the mean);
#             the Hodges-Lehmann estimate of d (median of the Walsh averages)
#             and its exact interval from qsignrank, with the attained
#             coverage; equal to wilcox.test(d, exact = TRUE, conf.int = TRUE),
#             whose p is written too, where that applies (no ties, no zero d);
#             computed directly otherwise (zero differences kept);
#             the exact sign-flip p of the signed-rank statistic, mid-ranks
#             for ties, zero differences dropped (as R does), +-Inf ranked
#             largest: defined for every set.
#   unpaired  the Hodges-Lehmann shift of the logs and its exact interval
#             from qwilcox, with the attained coverage 1 - 2 P(U <= qu - 1);
#             equal to wilcox.test(log(b), log(a), exact = TRUE,
#             conf.int = TRUE), whose p is written too, without ties or
#             zeros; computed directly otherwise;
#             the tie-aware exact p of the Mann-Whitney U from every split of
#             the pooled values (a zero ranks lowest), both as
#             P(|U - nm/2| >= |u_obs - nm/2|) and as twice the smaller tail.
#   describe  median of each side and the order-statistic interval
#             [x(k), x(n+1-k)], k the largest with 1 - 2 P(Bin(n, 1/2) <= k-1)
#             >= 95% (else k = 1, the range), with that coverage.
#   bh        p.adjust(p, "BH") and the decisions adjusted <= q (NA excluded).
#   fit       lm for the line and the log-log line; the offset power fit
#             y = a + b x^k on the grid k = 0.05, 0.06, .., 3 as stats does
#             (lm per k, least squares wins), and nls's continuous k beside it.

suppressWarnings(RNGversion("4.0.0")) # Mersenne-Twister, Inversion, Rejection
level <- 0.95

# ---- input sets -----------------------------------------------------------

# seeded draws rounded to integers (stable across R versions): paired rounds
# share a load factor, as interleaved rounds share the machine.
draw_paired <- function(seed, n, effect, cv = 0.02, load = 0.03, scale = 1e6) {
  set.seed(seed)
  l <- rnorm(n, 0, load)
  list(a = round(scale * exp(l + rnorm(n, 0, cv))),
       b = round(scale * exp(effect + l + rnorm(n, 0, cv))))
}
draw_unpaired <- function(seed, n, m, effect, cv = 0.03, scale = 1e6) {
  set.seed(seed)
  list(a = round(scale * exp(rnorm(n, 0, cv))),
       b = round(scale * exp(effect + rnorm(m, 0, cv))))
}
set <- function(name, tags, a, b) list(name = name, tags = tags, a = a, b = b)
arr <- function(x) I(x) # written as a JSON array even when of length 1
with_ab <- function(name, tags, ab) set(name, tags, ab$a, ab$b)

paired_sets <- list(
  set("n5 small gain", c("n=5", "positive effect"),
      c(100.0, 101.2, 99.5, 100.8, 98.9), c(102.1, 103.0, 101.9, 102.2, 101.0)),
  set("n5 no effect", c("n=5", "no effect"),
      c(9.00, 9.01, 8.99, 9.27, 9.28), c(9.135, 8.95, 9.125, 9.2, 9.31)),
  set("n5 loss", c("n=5", "negative effect"),
      c(1500, 1480, 1510, 1495, 1470), c(1410, 1400, 1432, 1405, 1399)),
  set("n6 gain", c("n=6", "positive effect"),
      c(45.1, 44.8, 46.0, 45.5, 44.9, 45.3), c(47.0, 46.1, 47.9, 46.4, 46.8, 47.2)),
  set("n6 loss", c("n=6", "negative effect"),
      c(20510, 20380, 20650, 20290, 20770, 20430), c(19880, 19990, 20110, 19750, 20390, 19640)),
  with_ab("n10 seeded +3%", c("n=10", "positive effect"), draw_paired(101, 10, 0.03)),
  with_ab("n10 seeded null", c("n=10", "no effect"), draw_paired(102, 10, 0)),
  with_ab("n20 seeded +1%", c("n=20", "positive effect"), draw_paired(103, 20, 0.01)),
  with_ab("n20 seeded -5%", c("n=20", "negative effect"), draw_paired(104, 20, -0.05)),
  with_ab("n20 seeded null", c("n=20", "no effect"), draw_paired(105, 20, 0, cv = 0.05)),
  set("n5 tripled", c("n=5", "large effect"),
      c(310, 305, 322, 298, 315), c(940, 921, 975, 899, 948)),
  with_ab("n10 seeded -90%", c("n=10", "large effect", "negative effect"), draw_paired(106, 10, log(0.1))),
  set("n5 constant ratio 1.1", c("n=5", "constant ratio"),
      c(100, 200, 300, 400, 500), c(110, 220, 330, 440, 550)),
  set("n6 constant ratio 2", c("n=6", "constant ratio", "large effect"),
      c(1.5, 2.25, 3, 4.5, 6, 7.5), c(3, 4.5, 6, 9, 12, 15)),
  set("n5 equal columns", c("n=5", "equal columns"),
      c(9.4, 9.41, 9.39, 9.42, 9.38), c(9.4, 9.41, 9.39, 9.42, 9.38)),
  set("n10 equal columns", c("n=10", "equal columns"),
      c(812, 799, 805, 821, 790, 808, 815, 801, 797, 811), c(812, 799, 805, 821, 790, 808, 815, 801, 797, 811)),
  set("n6 tied ratios", c("n=6", "ties"),
      c(100, 100, 100, 100, 100, 100), c(101, 99, 101, 102, 99, 101)),
  set("n10 some equal rounds", c("n=10", "ties", "zero differences"),
      c(45, 46, 45, 47, 46, 45, 46, 45, 47, 46), c(46, 46, 47, 47, 47, 45, 48, 46, 48, 47)),
  set("n20 quantised", c("n=20", "ties"),
      c(45, 46, 45, 45, 47, 46, 45, 46, 46, 45, 47, 45, 46, 45, 46, 46, 45, 47, 46, 45),
      c(46, 47, 46, 45, 48, 47, 46, 46, 47, 46, 48, 46, 47, 46, 47, 47, 46, 48, 46, 46)),
  set("n10 one odd round", c("n=10", "positive effect"),
      c(1000, 1004, 998, 1010, 995, 1002, 1007, 999, 1003, 1001),
      c(1101, 1108, 1095, 1112, 1090, 600, 1105, 1099, 1107, 1102)),
  set("n7 failed rounds (b = 0)", c("n=7", "zeros"),
      c(9.40, 9.41, 9.38, 9.42, 9.39, 9.40, 9.41), c(9.52, 9.50, 9.55, 9.51, 9.53, 0, 0)),
  set("n6 zero baseline round", c("n=6", "zeros"),
      c(0, 1210, 1195, 1220, 1201, 1215), c(1180, 1190, 1175, 1201, 1183, 1192)),
  set("n6 both zero in a round", c("n=6", "zeros", "zero differences"),
      c(880, 0, 875, 890, 869, 884), c(901, 0, 897, 915, 893, 899))
)

unpaired_sets <- list(
  set("n5/5 separated +10%", c("n=5", "positive effect"),
      c(100, 101, 102, 103, 104), c(110, 111, 112, 113, 114)),
  set("n5/5 overlapping", c("n=5", "no effect"),
      c(100.2, 99.1, 101.3, 100.7, 98.8), c(100.9, 99.6, 101.8, 98.5, 100.1)),
  set("n6/6 gain", c("n=6", "positive effect"),
      c(45.1, 44.8, 46.0, 45.5, 44.9, 45.3), c(46.2, 45.9, 47.1, 45.4, 46.6, 46.05)),
  with_ab("n10/10 seeded +2%", c("n=10", "positive effect"), draw_unpaired(201, 10, 10, 0.02)),
  with_ab("n10/10 seeded null", c("n=10", "no effect"), draw_unpaired(202, 10, 10, 0)),
  with_ab("n20/20 seeded +1%", c("n=20", "positive effect"), draw_unpaired(203, 20, 20, 0.01)),
  with_ab("n20/20 seeded -2%", c("n=20", "negative effect"), draw_unpaired(204, 20, 20, -0.02)),
  with_ab("n5/10 seeded +3%", c("unequal sizes", "n=5", "n=10"), draw_unpaired(205, 5, 10, 0.03)),
  with_ab("n10/5 seeded -3%", c("unequal sizes", "n=10", "n=5", "negative effect"), draw_unpaired(206, 10, 5, -0.03)),
  with_ab("n6/20 seeded null", c("unequal sizes", "n=6", "n=20"), draw_unpaired(207, 6, 20, 0)),
  with_ab("n20/6 seeded +4%", c("unequal sizes", "n=20", "n=6"), draw_unpaired(208, 20, 6, 0.04)),
  set("n5/8 large", c("unequal sizes", "n=5", "large effect"),
      c(210, 205, 222, 198, 215), c(1050, 990, 1101, 1020, 1075, 998, 1060, 1033)),
  set("n6/6 fivefold", c("n=6", "large effect"),
      c(12.1, 11.8, 12.5, 12.0, 11.9, 12.3), c(60.2, 59.1, 61.8, 58.7, 62.0, 60.5)),
  with_ab("n10/10 seeded -40%", c("n=10", "large effect", "negative effect"), draw_unpaired(209, 10, 10, log(0.6))),
  set("issue 28 bug 5: ties 45/46", c("n=5", "ties"),
      c(45, 45, 45, 45, 46), c(46, 46, 46, 46, 46)),
  set("n5/5 flat vs mixed", c("n=5", "ties"),
      c(45, 45, 45, 45, 45), c(45, 46, 45, 46, 45)),
  set("n5/5 flat shift", c("n=5", "ties", "constant ratio"),
      c(45, 45, 45, 45, 45), c(50, 50, 50, 50, 50)),
  set("n5/5 all equal", c("n=5", "ties", "equal columns"),
      c(45, 45, 45, 45, 45), c(45, 45, 45, 45, 45)),
  set("n5/5 equal columns", c("n=5", "ties", "equal columns"),
      c(100, 101, 102, 103, 104), c(100, 101, 102, 103, 104)),
  set("n10/10 equal columns", c("n=10", "ties", "equal columns"),
      c(812, 799, 805, 821, 790, 808, 815, 801, 797, 811), c(812, 799, 805, 821, 790, 808, 815, 801, 797, 811)),
  set("n10/10 quantised", c("n=10", "ties"),
      c(45, 46, 45, 47, 46, 45, 46, 45, 47, 46), c(46, 46, 47, 47, 48, 46, 47, 46, 48, 47)),
  set("n8/10 quantised", c("unequal sizes", "ties"),
      c(120, 121, 120, 122, 121, 120, 123, 121), c(121, 122, 122, 121, 123, 122, 124, 121, 122, 123)),
  set("issue 28 bug 6: 100x10 vs 99.9x6 122x4", c("n=10", "ties"),
      rep(100, 10), c(rep(99.9, 6), rep(122, 4))),
  set("n6/6 zero in a", c("n=6", "zeros"),
      c(0, 1210, 1195, 1220, 1201, 1215), c(1180, 1190, 1175, 1201, 1183, 1192)),
  set("n7/7 two zeros in b", c("n=7", "zeros", "negative effect"),
      c(9.40, 9.41, 9.38, 9.42, 9.39, 9.43, 9.37), c(9.52, 9.50, 9.55, 9.51, 9.53, 0, 0))
)

bh_sets <- list(
  list(name = "textbook", p = c(0.039, 0.001, 0.041, 0.008, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216)),
  list(name = "ties", p = c(0.01, 0.04, 0.01, 0.2, 0.04, 0.01, 0.5, 1)),
  list(name = "ones", p = c(1, 1, 0.001, 1, 0.03, 1)),
  list(name = "very small", p = c(0.3, 1e-300, 0.0049, 1e-20, 5e-8, 0.02, 0.7, 0.99)),
  list(name = "on the line k*q/m", p = c(0.01, 0.02, 0.03, 0.04, 0.05)),
  list(name = "single", p = 0.03),
  list(name = "all null", p = c(0.2, 0.9, 0.051, 0.6, 0.33)),
  list(name = "40 graded", p = round((1:40 / 41)^4, 6)),
  list(name = "with NA", p = c(0.001, NA, 0.02, 0.04, 0.3))
)

fit_sets <- list(
  list(name = "2000 + 0.1x", x = c(1000, 2000, 5000, 10000, 20000), f = function(x) 2000 + 0.1 * x),
  list(name = "100 + x^1.5", x = c(1000, 2000, 5000, 10000, 20000), f = function(x) 100 + x^1.5),
  list(name = "50 + 1e-4 x^2 from 0", x = c(0, 1000, 5000, 10000, 20000), f = function(x) 50 + 1e-4 * x^2),
  list(name = "3e-7 x^2", x = c(1000, 2000, 5000, 10000), f = function(x) 3e-7 * x^2),
  list(name = "measured", x = c(1000, 2000, 5000, 10000, 20000, 50000),
       y = c(2210, 2390, 3120, 4380, 7150, 15920)),
  list(name = "10 + x^3.5 (beyond the grid)", x = c(1, 2, 5, 10, 20), f = function(x) 10 + x^3.5)
)

# ---- reference computations -----------------------------------------------

# Order-statistic interval of the median, as stats.Describe.
describe <- function(x) {
  s <- sort(x[is.finite(x)])
  n <- length(s)
  if (n < 2) return(NULL)
  cov <- function(k) 1 - 2 * pbinom(k - 1, n, 0.5)
  ok <- which(cov(1:ceiling(n / 2)) >= level)
  k <- if (length(ok)) max(ok) else 1
  list(n = n, median = median(s), lo = s[k], hi = s[n + 1 - k], coverage = cov(k))
}

# Exact sign-flip p of the signed-rank statistic: zero differences dropped,
# mid-ranks for ties (+-Inf ranked largest). Doubled ranks are integers, so
# the comparison is exact. The distribution is symmetric, so this is also
# twice the smaller tail.
signed_rank_p <- function(d) {
  d <- d[d != 0]
  if (!length(d)) return(1)
  r2 <- 2 * rank(abs(d))
  sums <- 0
  for (r in r2) sums <- c(sums, sums + r)
  dev <- function(s) abs(2 * s - sum(r2))
  mean(dev(sums) >= dev(sum(r2[d > 0])))
}

# Tie-aware exact p of the Mann-Whitney U from every split of the pooled
# values (doubled rank sums of b, integers): "central" is
# P(|U - nm/2| >= |u_obs - nm/2|); "tails" is twice the smaller one-sided
# tail, capped at 1. They agree without ties (the distribution is then
# symmetric) and may differ with ties.
mann_whitney_p <- function(a, b) {
  r2 <- 2 * rank(c(a, b))
  n <- length(a); m <- length(b)
  if (choose(n + m, m) > 3e5) stop("too many splits to enumerate")
  w <- colSums(matrix(r2[combn(n + m, m)], nrow = m))
  obs <- sum(r2[n + seq_len(m)])
  dev <- function(w) abs(w - m * (n + m + 1))
  list(central = mean(dev(w) >= dev(obs)),
       tails = min(1, 2 * min(mean(w >= obs), mean(w <= obs))))
}

# Hodges-Lehmann estimate and exact order-statistic interval, computed
# directly: of the pairwise differences lb[j] - la[i] (Mann-Whitney), or of
# the Walsh averages (d[i] + d[j]) / 2, i <= j (signed rank), with the rank
# from the statistic's no-ties distribution, as wilcox.test does.
order_stat_interval <- function(est, quantile, cdf, size) {
  est <- sort(est)
  stopifnot(!anyNA(est))
  qu <- max(quantile((1 - level) / 2), 1)
  list(estimate = median(est), lo = est[qu], hi = est[size - qu + 1],
       coverage = 1 - 2 * cdf(qu - 1))
}
hl_shift <- function(la, lb) {
  n <- length(la); m <- length(lb)
  order_stat_interval(outer(lb, la, `-`), function(q) qwilcox(q, m, n),
                      function(q) pwilcox(q, m, n), n * m)
}
hl_walsh <- function(d) {
  n <- length(d)
  w <- outer(d, d, `+`)
  order_stat_interval(w[!lower.tri(w)] / 2, function(q) qsignrank(q, n),
                      function(q) psignrank(q, n), n * (n + 1) / 2)
}
same_hl <- function(hl, w) {
  stopifnot(hl$estimate == w$estimate, hl$lo == w$conf.int[1], hl$hi == w$conf.int[2])
}

quiet <- function(expr) withCallingHandlers(expr, warning = function(w) invokeRestart("muffleWarning"))
has_ties <- function(x) anyDuplicated(x) > 0

paired_ref <- function(s) {
  a <- s$a; b <- s$b
  d <- ifelse(a == b, 0, log(b / a)) # a zero value: d = +-Inf
  out <- list(name = s$name, tags = arr(s$tags), a = arr(a), b = arr(b), d = arr(d),
              describe_a = describe(a), describe_b = describe(b))
  if (all(is.finite(d))) {
    tt <- tryCatch(t.test(d, conf.level = level), error = function(e) e)
    if (inherits(tt, "error") || is.nan(tt$statistic)) { # every d 0: t = 0/0
      out$t_note <- paste("R t.test:", if (inherits(tt, "error")) conditionMessage(tt) else "t = 0/0, NaN")
      out$mean <- mean(d)
    } else {
      out$t <- list(mean = unname(tt$estimate), lo = tt$conf.int[1], hi = tt$conf.int[2],
                    p = tt$p.value, df = unname(tt$parameter))
    }
  } else {
    out$t_note <- "a round has a zero: its log ratio is infinite"
  }
  out$signed_rank_exact_p <- signed_rank_p(d)
  out$hl <- hl_walsh(d)
  if (all(is.finite(d)) && !has_ties(abs(d)) && all(d != 0)) {
    w <- wilcox.test(d, exact = TRUE, conf.int = TRUE, conf.level = level)
    same_hl(out$hl, w)
    stopifnot(abs(out$signed_rank_exact_p - w$p.value) < 1e-12)
    out$wilcoxon_p <- w$p.value
    out$hl_source <- "wilcox.test(d, exact = TRUE, conf.int = TRUE)"
  } else {
    out$hl_source <- "Walsh averages of every d (zero differences kept), order statistics from qsignrank: wilcox.test has no exact interval here"
  }
  out
}

unpaired_ref <- function(s) {
  a <- s$a; b <- s$b
  ties <- has_ties(c(a, b))
  out <- list(name = s$name, tags = arr(s$tags), a = arr(a), b = arr(b),
              describe_a = describe(a), describe_b = describe(b), ties = ties)
  if (choose(length(a) + length(b), length(b)) <= 3e5) {
    mw <- mann_whitney_p(a, b) # raw values: a zero ranks lowest
    out$mann_whitney_exact_p <- mw$central
    out$mann_whitney_exact_p_tails <- mw$tails
  }
  la <- log(a); lb <- log(b) # a zero value: -Inf
  out$hl <- hl_shift(la, lb)
  if (!ties && all(is.finite(c(la, lb)))) {
    w <- wilcox.test(lb, la, exact = TRUE, conf.int = TRUE, conf.level = level)
    same_hl(out$hl, w)
    out$wilcox_p <- w$p.value
    if (is.null(out$mann_whitney_exact_p))
      out$mann_whitney_exact_p <- out$mann_whitney_exact_p_tails <- w$p.value
    stopifnot(abs(out$mann_whitney_exact_p - w$p.value) < 1e-12,
              abs(out$mann_whitney_exact_p_tails - w$p.value) < 1e-12)
    out$hl_source <- "wilcox.test(log(b), log(a), exact = TRUE, conf.int = TRUE)"
  } else {
    out$hl_source <- "pairwise differences of the logs, order statistics from qwilcox: wilcox.test has no exact interval with ties or zeros"
  }
  out
}

bh_ref <- function(s) {
  adj <- p.adjust(s$p, "BH")
  list(name = s$name, p = arr(s$p), adjusted = arr(adj),
       q05 = arr(!is.na(adj) & adj <= 0.05), q10 = arr(!is.na(adj) & adj <= 0.10))
}

fit_ref <- function(s) {
  x <- s$x
  y <- if (is.null(s$y)) s$f(x) else s$y
  line <- lm(y ~ x)
  pos <- x > 0 & y > 0
  loglog <- lm(log(y[pos]) ~ log(x[pos]))
  # the grid of stats.OffsetPowerFit: k = 5/100 .. 300/100, first least SSE
  best <- NULL
  for (k in (5:300) / 100) {
    f <- lm(y ~ I(x^k))
    sse <- sum(residuals(f)^2)
    if (is.null(best) || sse < best$sse)
      best <- list(sse = sse, a = unname(coef(f)[1]), b = unname(coef(f)[2]), k = k,
                   r2 = summary(f)$r.squared)
  }
  nl <- tryCatch(nls(y ~ a + b * x^k, start = list(a = best$a, b = best$b, k = best$k),
                     control = nls.control(maxiter = 500, scaleOffset = 1)),
                 error = function(e) NULL)
  list(name = s$name, x = arr(x), y = arr(y),
       linear = list(slope = unname(coef(line)[2]), intercept = unname(coef(line)[1]),
                     r2 = summary(line)$r.squared),
       power = list(k = unname(coef(loglog)[2]), intercept = unname(coef(loglog)[1]),
                    r2 = summary(loglog)$r.squared),
       offset_power = best[c("a", "b", "k", "r2")],
       nls_k = if (is.null(nl)) NULL else unname(coef(nl)["k"]))
}

# ---- JSON -----------------------------------------------------------------

# Numbers in the fewest digits (15..17) that read back as the same double;
# NA is null, infinities are the strings "+Inf" and "-Inf".
num <- function(x) {
  if (is.na(x)) return("null")
  if (is.logical(x)) return(if (x) "true" else "false")
  if (is.infinite(x)) return(if (x > 0) '"+Inf"' else '"-Inf"')
  x <- as.double(x)
  for (d in 15:17) {
    s <- sprintf("%.*g", d, x)
    if (as.numeric(s) == x) break
  }
  s
}
str_json <- function(s) paste0('"', gsub('"', '\\\\"', s), '"')
scalar <- function(x) if (is.character(x)) str_json(x) else num(x)
# Objects one key a line; vectors (arr(), or longer than 1) on one line.
to_json <- function(v, indent = "") {
  inner <- paste0(indent, "  ")
  if (is.list(v) && !is.null(names(v))) {
    v <- v[!vapply(v, is.null, TRUE)]
    keys <- names(v)
    body <- vapply(seq_along(v), function(i) {
      val <- v[[i]]
      s <- if (is.list(val)) to_json(val, inner)
           else if (length(val) != 1 || inherits(val, "AsIs"))
             paste0("[", paste(vapply(val, scalar, ""), collapse = ", "), "]")
           else scalar(val)
      paste0(inner, str_json(keys[i]), ": ", s)
    }, "")
    return(paste0("{\n", paste(body, collapse = ",\n"), "\n", indent, "}"))
  }
  body <- vapply(v, function(e) paste0(inner, to_json(e, inner)), "")
  paste0("[\n", paste(body, collapse = ",\n"), "\n", indent, "]")
}

epoch <- Sys.getenv("SOURCE_DATE_EPOCH")
date <- if (nzchar(epoch)) as.Date(as.POSIXct(as.numeric(epoch), origin = "1970-01-01", tz = "UTC")) else Sys.Date()
doc <- list(
  tool = R.version.string,
  generated = format(date, "%Y-%m-%d"),
  script = "scripts/stats-reference.R",
  level = level,
  paired = quiet(lapply(paired_sets, paired_ref)),
  unpaired = quiet(lapply(unpaired_sets, unpaired_ref)),
  bh = lapply(bh_sets, bh_ref),
  fit = quiet(lapply(fit_sets, fit_ref))
)
# Paths from the repository root, wherever the script is run from.
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
if (length(script)) setwd(file.path(dirname(script), ".."))
out <- "stats/testdata/reference.json"
dir.create(dirname(out), showWarnings = FALSE)
writeLines(to_json(doc), out)
cat(sprintf("%s: %d paired, %d unpaired, %d BH, %d fit sets (%s)\n", out,
            length(doc$paired), length(doc$unpaired), length(doc$bh), length(doc$fit), R.version.string))
