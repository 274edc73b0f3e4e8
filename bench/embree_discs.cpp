// Peer for issue 8: Embree 3 casting Aerie's rays against Embree's own disc primitives built from the same map
// points, so that a frame time separates "points against triangles" (scan_peers.py: Embree on a Poisson mesh)
// from "Aerie's traversal against Embree's" on the very same disks.
//
// Points on a plane (finite plane thickness below gamma_max, a normal) become RTC_GEOMETRY_TYPE_ORIENTED_DISC_POINT
// of radius rho; the others RTC_GEOMETRY_TYPE_DISC_POINT (facing the ray), as Aerie's beam index lists them.
// Nearest hit only: no surface layer and no near-parallel fallback, so it does a little less than Aerie per ray.
//
//   apt-get install libembree-dev
//   g++ -O2 -fopenmp -o embree_discs bench/embree_discs.cpp -lembree3
//   aerie export tiled.amap tiled_map.ply            # x y z nx ny nz gamma, binary little endian
//   aerie bench scan --map tiled.amap --pose 44.44,67.76,3.0,0,0,0 --sensors avia,os1_128 --rays-out rays_A
//   ./embree_discs tiled_map.ply --rho 0.0433 --gamma-max 0.025 --threads 2 rays_A/rays_avia.f32 rays_A/rays_os1_128.f32
//
// rho = sqrt(3)/2 * r_map and gamma_max = r_map / 2 are the beam index's defaults (r_map 0.05 m here).
//
// --sort casts the rays in Morton order over their azimuth and elevation (0.1 deg steps) instead of the file's
// order; --packet 4|8|16 casts them so sorted, that many at a time, through rtcIntersect4/8/16 with Embree's
// coherent flag (what Embree's ray packets give on a scan pattern; the sort is not timed).
#include <embree3/rtcore.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "embree_discs: %s\n", msg.c_str());
  std::exit(2);
}

// The vertices of an `aerie export` PLY as seven floats each (x y z nx ny nz gamma): every property must be a
// float; those seven are picked by name, the others (intensity) skipped.
std::vector<float> read_ply(const char* path, size_t& n) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(std::string(path) + ": cannot open");
  std::string line;
  std::vector<std::string> names;
  n = 0;
  while (std::getline(f, line)) {
    if (line.rfind("element vertex ", 0) == 0) n = std::stoul(line.substr(15));
    if (line.rfind("property ", 0) == 0) {
      if (line.rfind("property float ", 0) != 0) fail(std::string(path) + ": expected float properties, found " + line);
      names.push_back(line.substr(15));
    }
    if (line == "end_header") break;
  }
  const char* want[7] = {"x", "y", "z", "nx", "ny", "nz", "scalar_gamma"};
  size_t at[7];
  for (int k = 0; k < 7; k++) {
    auto it = std::find(names.begin(), names.end(), want[k]);
    if (it == names.end()) fail(std::string(path) + ": no property " + want[k] + " (write it with `aerie export`)");
    at[k] = static_cast<size_t>(it - names.begin());
  }
  size_t w = names.size();
  std::vector<float> raw(n * w);
  if (!f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(n * w * 4)))
    fail(std::string(path) + ": fewer vertices than the header says");
  std::vector<float> v(n * 7);
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 7; k++) v[i * 7 + k] = raw[i * w + at[k]];
  return v;
}

void add_discs(RTCDevice dev, RTCScene scene, const std::vector<float>& v, const std::vector<size_t>& idx, float rho,
               bool oriented) {
  if (idx.empty()) return;
  RTCGeometry g =
      rtcNewGeometry(dev, oriented ? RTC_GEOMETRY_TYPE_ORIENTED_DISC_POINT : RTC_GEOMETRY_TYPE_DISC_POINT);
  auto* vb = static_cast<float*>(
      rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT4, 16, idx.size()));
  float* nb = oriented ? static_cast<float*>(rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_NORMAL, 0,
                                                                     RTC_FORMAT_FLOAT3, 12, idx.size()))
                       : nullptr;
  for (size_t k = 0; k < idx.size(); k++) {
    const float* p = &v[idx[k] * 7];
    std::memcpy(vb + 4 * k, p, 12);
    vb[4 * k + 3] = rho;
    if (nb) std::memcpy(nb + 3 * k, p + 3, 12);
  }
  rtcCommitGeometry(g);
  rtcAttachGeometry(scene, g);
  rtcReleaseGeometry(g);
}

// Rays reordered so that neighbours in the file point nearly the same way (Morton order over azimuth and
// elevation in 0.1 degree steps), which is what a packet of consecutive rays needs.
void sort_by_direction(std::vector<float>& r) {
  size_t m = r.size() / 6;
  std::vector<std::pair<uint64_t, size_t>> key(m);
  auto spread = [](uint64_t x) {
    x &= 0xFFFF;
    x = (x | (x << 8)) & 0x00FF00FF;
    x = (x | (x << 4)) & 0x0F0F0F0F;
    x = (x | (x << 2)) & 0x33333333;
    x = (x | (x << 1)) & 0x55555555;
    return x;
  };
  for (size_t i = 0; i < m; i++) {
    const float* d = &r[6 * i + 3];
    double az = std::atan2(d[1], d[0]) * 180.0 / M_PI + 180.0;
    double el = std::asin(std::clamp(d[2], -1.0f, 1.0f)) * 180.0 / M_PI + 90.0;
    key[i] = {spread(static_cast<uint64_t>(az * 10.0)) | spread(static_cast<uint64_t>(el * 10.0)) << 1, i};
  }
  std::sort(key.begin(), key.end());
  std::vector<float> out(r.size());
  for (size_t i = 0; i < m; i++) std::copy_n(&r[6 * key[i].second], 6, &out[6 * i]);
  r.swap(out);
}

// Casts the rays one at a time through rtcIntersect1; returns the hits.
size_t cast_singles(RTCScene scene, const std::vector<float>& r, float max_range, int threads) {
  size_t m = r.size() / 6, h = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : h) num_threads(threads)
  for (size_t i = 0; i < m; i++) {
    RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    RTCRayHit rh;
    const float* q = &r[6 * i];
    rh.ray.org_x = q[0], rh.ray.org_y = q[1], rh.ray.org_z = q[2];
    rh.ray.dir_x = q[3], rh.ray.dir_y = q[4], rh.ray.dir_z = q[5];
    rh.ray.tnear = 0.0f, rh.ray.tfar = max_range, rh.ray.time = 0.0f;
    rh.ray.mask = 0xFFFFFFFFu, rh.ray.id = 0, rh.ray.flags = 0;
    rh.hit.geomID = RTC_INVALID_GEOMETRY_ID;
    rtcIntersect1(scene, &ctx, &rh);
    h += rh.hit.geomID != RTC_INVALID_GEOMETRY_ID;
  }
  return h;
}

// Casts the rays `packet` at a time through rtcIntersect4/8/16 (coherent context); returns the hits.
template <int N, typename RH, void (*Cast)(const int*, RTCScene, RTCIntersectContext*, RH*)>
size_t cast_n(RTCScene scene, const std::vector<float>& r, float max_range, int threads) {
  size_t m = r.size() / 6, groups = (m + N - 1) / N, h = 0;
#pragma omp parallel for schedule(dynamic, 8) reduction(+ : h) num_threads(threads)
  for (size_t g = 0; g < groups; g++) {
    RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    ctx.flags = RTC_INTERSECT_CONTEXT_FLAG_COHERENT;
    alignas(64) RH rh;
    alignas(64) int valid[N];
    for (int k = 0; k < N; k++) {
      size_t i = g * N + k;
      valid[k] = i < m ? -1 : 0;
      const float* q = &r[6 * std::min(i, m - 1)];
      rh.ray.org_x[k] = q[0], rh.ray.org_y[k] = q[1], rh.ray.org_z[k] = q[2];
      rh.ray.dir_x[k] = q[3], rh.ray.dir_y[k] = q[4], rh.ray.dir_z[k] = q[5];
      rh.ray.tnear[k] = 0.0f, rh.ray.tfar[k] = max_range, rh.ray.time[k] = 0.0f;
      rh.ray.mask[k] = 0xFFFFFFFFu, rh.ray.id[k] = 0, rh.ray.flags[k] = 0;
      rh.hit.geomID[k] = RTC_INVALID_GEOMETRY_ID;
    }
    Cast(valid, scene, &ctx, &rh);
    for (int k = 0; k < N; k++) h += valid[k] && rh.hit.geomID[k] != RTC_INVALID_GEOMETRY_ID;
  }
  return h;
}

void cast4(const int* v, RTCScene s, RTCIntersectContext* c, RTCRayHit4* rh) { rtcIntersect4(v, s, c, rh); }
void cast8(const int* v, RTCScene s, RTCIntersectContext* c, RTCRayHit8* rh) { rtcIntersect8(v, s, c, rh); }
void cast16(const int* v, RTCScene s, RTCIntersectContext* c, RTCRayHit16* rh) { rtcIntersect16(v, s, c, rh); }

size_t cast_packets(RTCScene scene, const std::vector<float>& r, int packet, float max_range, int threads) {
  if (packet == 4) return cast_n<4, RTCRayHit4, cast4>(scene, r, max_range, threads);
  if (packet == 8) return cast_n<8, RTCRayHit8, cast8>(scene, r, max_range, threads);
  return cast_n<16, RTCRayHit16, cast16>(scene, r, max_range, threads);
}

}  // namespace

int main(int argc, char** argv) {
  float rho = 0.0433f, gamma_max = 0.025f, max_range = 200.0f;
  int threads = 2, repeat = 10, packet = 1;
  bool sorted = false;
  std::vector<const char*> pos;
  for (int a = 1; a < argc; a++) {
    std::string s = argv[a];
    auto next = [&]() -> const char* {
      if (a + 1 >= argc) fail(s + " needs a value");
      return argv[++a];
    };
    if (s == "--rho") rho = std::atof(next());
    else if (s == "--gamma-max") gamma_max = std::atof(next());
    else if (s == "--max-range") max_range = std::atof(next());
    else if (s == "--threads") threads = std::atoi(next());
    else if (s == "--repeat") repeat = std::atoi(next());
    else if (s == "--packet") packet = std::atoi(next());
    else if (s == "--sort") sorted = true;
    else pos.push_back(argv[a]);
  }
  if (pos.size() < 2)
    fail("usage: embree_discs MAP.ply [--rho R] [--gamma-max G] [--threads N] [--sort] [--packet 4|8|16] RAYS.f32...");
  if (repeat < 1 || threads < 1) fail("--repeat and --threads must be at least 1");
  if (packet != 1 && packet != 4 && packet != 8 && packet != 16) fail("--packet must be 1, 4, 8 or 16");
  size_t n;
  std::vector<float> v = read_ply(pos[0], n);
  std::vector<size_t> planar, facing;
  for (size_t i = 0; i < n; i++) {
    const float* p = &v[i * 7];
    bool has_normal = p[3] * p[3] + p[4] * p[4] + p[5] * p[5] > 0.5f;
    (std::isfinite(p[6]) && p[6] < gamma_max && has_normal ? planar : facing).push_back(i);
  }
  std::string config = "threads=" + std::to_string(threads);
  RTCDevice dev = rtcNewDevice(config.c_str());
  RTCScene scene = rtcNewScene(dev);
  auto t0 = Clock::now();
  add_discs(dev, scene, v, planar, rho, true);
  add_discs(dev, scene, v, facing, rho, false);
  rtcCommitScene(scene);
  std::printf("{\"points\": %zu, \"planar\": %zu, \"embree_build_s\": %.3f}\n", n, planar.size(), seconds_since(t0));
  for (size_t a = 1; a < pos.size(); a++) {
    std::ifstream f(pos[a], std::ios::binary | std::ios::ate);
    if (!f) fail(std::string(pos[a]) + ": cannot open");
    size_t bytes = static_cast<size_t>(f.tellg());
    if (bytes == 0 || bytes % 24 != 0)
      fail(std::string(pos[a]) + ": expected rays of six floats (24 bytes) each, as `aerie bench scan --rays-out` writes");
    f.seekg(0);
    std::vector<float> r(bytes / 4);
    f.read(reinterpret_cast<char*>(r.data()), static_cast<std::streamsize>(bytes));
    size_t m = r.size() / 6;
    if (packet > 1 || sorted) sort_by_direction(r);
    std::vector<double> times;
    size_t hits = 0;
    for (int rep = 0; rep <= repeat; rep++) {  // the first pass warms up, uncounted
      auto s = Clock::now();
      size_t h = packet > 1 ? cast_packets(scene, r, packet, max_range, threads)
                            : cast_singles(scene, r, max_range, threads);
      if (rep > 0) times.push_back(seconds_since(s) * 1e3);
      hits = h;
    }
    std::sort(times.begin(), times.end());
    double med = times[times.size() / 2];
    std::printf("{\"rays\": \"%s\", \"n\": %zu, \"median_ms\": %.2f, \"min_ms\": %.2f, \"mrays_per_s\": %.2f, \"hit\": %.3f}\n",
                pos[a], m, med, times[0], m / med / 1e3, static_cast<double>(hits) / m);
  }
  rtcReleaseScene(scene);
  rtcReleaseDevice(dev);
  return 0;
}
