#!/usr/bin/python3
"""torch_replica.py: wildcpu's one-region training replayed in PyTorch, to rank regularizers
(dropout, input noise, label blur, initialization) that wildcpu does not have, before building
any of them. A measurement aid for docs/quality.md, not a test and not an oracle:
its sampling is wildcpu's in kind (jitter on the pooling grid, --rotate with the wind and aspect
vectors turned, batch 4, AdamW with decay on weights only, warmup then cosine to 40% (--lr-end)), not in bits.

  tools/torch_replica.py --train r1 --score r2 r3 r6 [--seed N] [--drop P] [--noise S] ...
                         [--context PX] [--smooth SIGMA ...] [--gn GROUPS]

Each region is a `wildcpu synth` directory (tiles.vrt, oracle_risk.tif). Prints, per scored
region, the AP of the map over the AP of the region's oracle, the mean, and the same with each
region's features normalized by its own statistics instead of the training region's.
Needs Debian's python3-torch, python3-gdal, python3-scipy (label blur, smoothing); 2 threads.
"""
import argparse, math, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from osgeo import gdal

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument('--train', required=True); p.add_argument('--score', nargs='+', required=True)
p.add_argument('--seed', type=int, default=1); p.add_argument('--epochs', type=int, default=12)
p.add_argument('--batch', type=int, default=4); p.add_argument('--lr', type=float, default=5e-4)
p.add_argument('--lr-end', type=float, default=0.4, help="where the cosine ends, a fraction of --lr (wildcpu's --lr-end)")
p.add_argument('--wd', type=float, default=1.0, help='AdamW weight decay, weights only')
p.add_argument('--pw', type=float, default=3.0, help='loss weight of burned pixels')
p.add_argument('--rotate', type=float, default=45, help='largest turn, degrees')
p.add_argument('--drop', type=float, default=0, help='dropout after the bottleneck and the last decoder block')
p.add_argument('--drop2d', type=float, default=0, help='the same, whole channels')
p.add_argument('--noise', type=float, default=0, help='Gaussian noise on normalized inputs')
p.add_argument('--lblur', type=float, default=0, help='labels blurred by a Gaussian of this sigma (px)')
p.add_argument('--context', type=int, default=0, help='pixels of input read around each patch; the loss counts the patch only')
p.add_argument('--smooth', type=float, nargs='*', default=[], help='also score the maps smoothed by a Gaussian of these sigmas (px)')
p.add_argument('--gn', type=int, default=0, help='GroupNorm of this many groups after every 3x3 convolution (0: none)')
p.add_argument('--gain', type=float, default=1.0, help="initial weights' bound over He's")
a = p.parse_args()
torch.set_num_threads(2)
torch.manual_seed(a.seed)
rng = np.random.default_rng(a.seed)


def load(region):
    ds = gdal.Open(region + '/tiles.vrt')
    bands = []
    for i in range(1, ds.RasterCount + 1):
        b = ds.GetRasterBand(i)
        v = b.ReadAsArray().astype(np.float64)
        bands.append((b.GetDescription(), v, v == b.GetNoDataValue()))
    feats = [t for t in bands if t[0] != 'fire']
    label = [t for t in bands if t[0] == 'fire'][0]
    X = np.stack([v for _, v, _ in feats])
    bad = np.any(np.stack([m for _, _, m in bands]), 0)
    return [n for n, _, _ in feats], X, label[1], ~bad


names, X1, Y1, V1 = load(a.train)
C = len(names)
mean = np.array([X1[c][V1].mean() for c in range(C)])
std = np.array([X1[c][V1].std() for c in range(C)])
pairs = [(names.index(u), names.index(v)) for u, v in (('wind_u', 'wind_v'), ('aspect_sin', 'aspect_cos'))]
base = Y1[V1].mean()
if a.lblur:
    from scipy.ndimage import gaussian_filter
    num = gaussian_filter(np.where(V1, Y1, 0).astype(float), a.lblur)
    den = gaussian_filter(V1.astype(float), a.lblur)
    Y1 = np.where(V1, num / np.maximum(den, 1e-6), Y1)


def norm(X, V, mu, sd):
    Z = (X - mu[:, None, None]) / sd[:, None, None]
    Z[:, ~V] = 0
    return Z.astype(np.float32)


class UNetLite(nn.Module):  # ../shared/bench/torch_ref.py's network, wildcpu's initialization
    def __init__(s, cin, w=32):
        super().__init__()
        def c(i, o):
            conv = nn.Conv2d(i, o, 3, padding=1)
            return nn.Sequential(conv, nn.GroupNorm(a.gn, o)) if a.gn else conv
        s.e1 = nn.Sequential(c(cin, w), nn.ReLU(), c(w, w), nn.ReLU())
        s.e2 = nn.Sequential(c(w, 2 * w), nn.ReLU(), c(2 * w, 2 * w), nn.ReLU())
        s.b = nn.Sequential(c(2 * w, 4 * w), nn.ReLU(), c(4 * w, 4 * w), nn.ReLU())
        s.d2 = nn.Sequential(c(6 * w, 2 * w), nn.ReLU(), c(2 * w, 2 * w), nn.ReLU())
        s.d1 = nn.Sequential(c(3 * w, w), nn.ReLU(), c(w, w), nn.ReLU())
        s.h = nn.Conv2d(w, 1, 1)
        for m in s.modules():
            if isinstance(m, nn.Conv2d):
                fan = m.weight[0].numel()
                bound = a.gain * math.sqrt(6 / fan) if m is not s.h else 1 / math.sqrt(fan)
                nn.init.uniform_(m.weight, -bound, bound)
                nn.init.zeros_(m.bias)
        nn.init.constant_(s.h.bias, math.log(base / (1 - base)))

    def regularize(s, t):
        if a.drop2d: t = F.dropout2d(t, a.drop2d, s.training)
        if a.drop: t = F.dropout(t, a.drop, s.training)
        return t

    def forward(s, x):
        e1 = s.e1(x)
        e2 = s.e2(F.max_pool2d(e1, 2))
        m = s.regularize(s.b(F.max_pool2d(e2, 2)))
        u = s.d2(torch.cat([F.interpolate(m, scale_factor=2), e2], 1))
        u = s.regularize(s.d1(torch.cat([F.interpolate(u, scale_factor=2), e1], 1)))
        return s.h(u)


net = UNetLite(C)
H, W = Y1.shape
P = 64
origins = [(y, x) for y in range(0, H - P + 1, P) for x in range(0, W - P + 1, P)]
Q = P + 2 * a.context  # the window read: the patch and its context
yy, xx = np.meshgrid(np.arange(Q) - Q / 2 + 0.5, np.arange(Q) - Q / 2 + 0.5, indexing='ij')
counted = np.zeros((Q, Q), bool)
counted[a.context:a.context + P, a.context:a.context + P] = True


def sample(y0, x0):
    """A patch shifted by up to half a patch (multiples of 4), turned by up to --rotate degrees:
    output offset o (east, north) takes the input at R(-t) o, bilinearly; vectors turn by R(t)."""
    y0 = min(max(y0 + 4 * rng.integers(-8, 9), 0), H - P)
    x0 = min(max(x0 + 4 * rng.integers(-8, 9), 0), W - P)
    cy, cx = y0 + P / 2, x0 + P / 2
    t = math.radians(rng.uniform(-a.rotate, a.rotate)) if a.rotate else 0.0
    c, s = math.cos(t), math.sin(t)
    east, north = xx, -yy
    ix = cx - 0.5 + c * east + s * north
    iy = cy - 0.5 - (-s * east + c * north)
    inside = (ix >= 0) & (ix <= W - 1) & (iy >= 0) & (iy <= H - 1)
    ix, iy = np.clip(ix, 0, W - 1), np.clip(iy, 0, H - 1)
    x0i, y0i = np.floor(ix).astype(int), np.floor(iy).astype(int)
    x1i, y1i = np.minimum(x0i + 1, W - 1), np.minimum(y0i + 1, H - 1)
    fx, fy = ix - x0i, iy - y0i
    Xs = (X1[:, y0i, x0i] * (1 - fx) * (1 - fy) + X1[:, y0i, x1i] * fx * (1 - fy)
          + X1[:, y1i, x0i] * (1 - fx) * fy + X1[:, y1i, x1i] * fx * fy)
    Vs = V1[y0i, x0i] & V1[y0i, x1i] & V1[y1i, x0i] & V1[y1i, x1i] & inside
    Ys = Y1[np.rint(iy).astype(int), np.rint(ix).astype(int)]
    for u, v in pairs:
        U, Vv = Xs[u].copy(), Xs[v].copy()
        Xs[u], Xs[v] = c * U - s * Vv, s * U + c * Vv
    return norm(Xs, Vs, mean, std), Ys.astype(np.float32), (Vs & counted).astype(np.float32)


steps_per_epoch = len(origins) // a.batch
total = steps_per_epoch * a.epochs
warm = min(100, total // 10)
weights = [q for q in net.parameters() if q.dim() == 4]  # decay on convolution weights only
biases = [q for q in net.parameters() if q.dim() != 4]   # (biases, GroupNorm's scales and shifts)
opt = torch.optim.AdamW([{'params': weights, 'weight_decay': a.wd}, {'params': biases, 'weight_decay': 0}], lr=a.lr)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: (k + 1) / warm if k < warm else
                                          a.lr_end + (1 - a.lr_end) * 0.5 * (1 + math.cos(math.pi * min(1, (k - warm) / max(1, total - warm - 1)))))
t0 = time.time()
for epoch in range(a.epochs):
    order = rng.permutation(len(origins))
    for st in range(steps_per_epoch):
        xs, ys, ms = zip(*[sample(*origins[i]) for i in order[st * a.batch:(st + 1) * a.batch]])
        x = torch.from_numpy(np.stack(xs))
        y = torch.from_numpy(np.stack(ys))[:, None]
        m = torch.from_numpy(np.stack(ms))[:, None]
        if a.noise: x = x + a.noise * torch.randn_like(x) * (m > 0)
        loss = (F.binary_cross_entropy_with_logits(net(x), y, reduction='none', pos_weight=torch.tensor(a.pw)) * m).sum() / m.sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


def ap(p, y):
    o = np.argsort(-p, kind='stable')
    y = y[o]
    tp = np.cumsum(y)
    return float(((tp / np.arange(1, len(y) + 1)) * y).sum() / tp[-1])


net.eval()
own, self_norm = [], []
for region in a.score:
    _, X, Y, V = load(region)
    ds = gdal.Open(region + '/oracle_risk.tif')
    oracle_ap = ap(ds.GetRasterBand(1).ReadAsArray()[V], Y[V])
    mu = np.array([X[c][V].mean() for c in range(C)])
    sd = np.array([X[c][V].std() for c in range(C)])
    for out, (m_, s_) in ((own, (mean, std)), (self_norm, (mu, sd))):
        with torch.no_grad():
            z = net(torch.from_numpy(norm(X, V, m_, s_))[None])[0, 0].numpy()
        out.append(ap(z[V], Y[V]) / oracle_ap)
        if out is own and a.smooth:
            from scipy.ndimage import gaussian_filter  # normalized over valid pixels only
            smoothed = [gaussian_filter(np.where(V, z, 0.0), g) / np.maximum(gaussian_filter(V.astype(float), g), 1e-6)
                        for g in a.smooth]
            print(f'{region} smoothed by ' + ', '.join(f'{g:g} px: {ap(zs[V], Y[V]) / oracle_ap:.3f}' for g, zs in zip(a.smooth, smoothed))
                  + f' (not smoothed: {out[-1]:.3f})', flush=True)
print(f'seed {a.seed} ({time.time() - t0:.0f} s): AP / oracle AP ' + ' '.join(f'{v:.3f}' for v in own)
      + f' mean {np.mean(own):.3f}; each region normalized by its own statistics '
      + ' '.join(f'{v:.3f}' for v in self_norm) + f' mean {np.mean(self_norm):.3f}')
