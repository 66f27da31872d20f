// fusionlab hand-written CUDA kernels (built by cuda_ops.py with load_inline, cached).
// Math in fp32 whatever the storage type; 16-byte vector loads and stores where the
// pointers and sizes allow, so each kernel reads every input once and writes once.
// The pointwise ops and the LSTM gates have a hand-written backward (train mode; the
// formulas are derived in reference.py): it recomputes x + y or the gates from the saved
// inputs, and reduces a bias's gradient (the sum over rows, in fp32) in the same launch:
// one wave of blocks, per-row-group partial rows, and the last block of each column block
// sums them in a fixed order (deterministic; no atomics on the sums).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <map>
#include <mutex>

namespace {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

enum Op { GELU_TANH = 0, GELU_ERF = 1, RELU = 2 };

// 1 / (1 + exp(-v)) with the hardware exp and a fast divide: exact limits 0 and 1
__device__ __forceinline__ float sigmoidf(float v) { return __fdividef(1.0f, 1.0f + __expf(-v)); }

// tanh(v) = 2 sigmoid(2v) - 1
__device__ __forceinline__ float fast_tanhf(float v) { return 2.0f * sigmoidf(2.0f * v) - 1.0f; }

// 16-bit storage: the hardware's approximate instructions (one MUFU op each, no range
// fix-ups). Their error (rel 2^-11 for tanh.approx, a few ulp for ex2/rcp) is far below
// bf16/fp16 rounding and the check's tolerance; fp32 keeps the accurate paths above.
__device__ __forceinline__ float tanh_approx(float v) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float rcp_approx(float v) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float ex2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
// sigmoid(v) = 0.5 + 0.5 tanh(v / 2)
__device__ __forceinline__ float sigmoid_approx(float v) { return fmaf(0.5f, tanh_approx(0.5f * v), 0.5f); }

// the gate math in the storage type's precision: the approximate instructions for 16-bit
template <bool HALF>
__device__ __forceinline__ float sigmoid_of(float v) { return HALF ? sigmoid_approx(v) : sigmoidf(v); }
template <bool HALF>
__device__ __forceinline__ float tanh_of(float v) { return HALF ? tanh_approx(v) : fast_tanhf(v); }

// v Phi(v), Phi from erf by Abramowitz & Stegun 7.1.25 (abs error 2.5e-5, so at most
// 1.3e-5 |v| in GELU). With z = |v| / sqrt(2), t = 1 / (1 + 0.47047 z):
// q = (1 - erf(z)) / 2 = t (a1 + t (a2 + t a3)) exp(-z^2) / 2, and Phi(v) = 1 - q for
// v >= 0, q for v < 0.
__device__ __forceinline__ float gelu_erf_approx(float v) {
  const float t = rcp_approx(fmaf(0.33267253f, fabsf(v), 1.0f));  // 0.47047 / sqrt(2)
  const float p = t * fmaf(t, fmaf(t, 0.3739278f, -0.0479399f), 0.1740121f);  // a1..a3 halved
  const float vq = v * p * ex2_approx(v * v * -0.7213475204444817f);  // exp(-v^2/2)
  return v < 0.0f ? vq : v - vq;
}

template <int OP, bool HALF>
__device__ __forceinline__ float act(float v) {
  // GELU tanh: 0.5 v (1 + tanh(a)) = v sigmoid(2a)
  if (OP == GELU_TANH) return v * sigmoidf(1.5957691216057308f * (v + 0.044715f * v * v * v));
  if (OP == GELU_ERF) return HALF ? gelu_erf_approx(v) : 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
  return fmaxf(v, 0.0f);
}

// d act / dv, the derivative of act's formula
// Phi(v) + v phi(v) with gelu_erf_approx's Phi: q = Phi(-|v|) = p exp(-v^2/2), and
// phi(v) = exp(-v^2/2) / sqrt(2 pi) from the same ex2
__device__ __forceinline__ float gelu_erf_grad_approx(float v) {
  const float t = rcp_approx(fmaf(0.33267253f, fabsf(v), 1.0f));
  const float p = t * fmaf(t, fmaf(t, 0.3739278f, -0.0479399f), 0.1740121f);
  const float e = ex2_approx(v * v * -0.7213475204444817f);
  const float q = p * e;
  return (v < 0.0f ? q : 1.0f - q) + v * e * 0.3989422804014327f;
}

template <int OP, bool HALF>
__device__ __forceinline__ float act_grad(float v) {
  if (OP == GELU_TANH) {
    // s + v s (1 - s) u', s = sigmoid(u), u = K (v + 0.044715 v^3), u' = K + 3 0.044715 K v^2
    const float s = sigmoidf(1.5957691216057308f * (v + 0.044715f * v * v * v));
    return s + v * s * (1.0f - s) * fmaf(0.21406444881780073f, v * v, 1.5957691216057308f);
  }
  if (OP == GELU_ERF) {
    // Phi(v) + v phi(v)
    if (HALF) return gelu_erf_grad_approx(v);
    return 0.5f * (1.0f + erff(v * 0.7071067811865476f)) + v * 0.3989422804014327f * __expf(-0.5f * v * v);
  }
  return v > 0.0f ? 1.0f : 0.0f;
}

inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
inline bool aligned16(const void* p) { return aligned(p, 16); }

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// out = act(x [+ y]); y has x's numel (ylen == n) or is broadcast with period ylen.
// VEC: N elements per thread per step (16 bytes); ylen % N == 0 and 16-byte aligned.
template <typename T, int OP, int N>
__global__ void pointwise_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                                 int64_t n, int64_t ylen) {
  using P = Pack<T, N>;
  const int64_t npack = n / N;
  const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (p < npack) {
    P xv = reinterpret_cast<const P*>(x)[p];
    P yv;
    if (y != nullptr) yv = reinterpret_cast<const P*>(y)[ylen == n ? p : ((p * N) % ylen) / N];
    P o;
#pragma unroll
    for (int k = 0; k < N; k++) {
      float v = static_cast<float>(xv.v[k]);
      if (y != nullptr) v += static_cast<float>(yv.v[k]);
      o.v[k] = static_cast<T>(act<OP, (sizeof(T) == 2)>(v));
    }
    reinterpret_cast<P*>(out)[p] = o;
  }
  // the tail that does not fill a pack (only when N > 1)
  const int64_t i = npack * N + p;
  if (N > 1 && p < N && i < n) {
    float v = static_cast<float>(x[i]);
    if (y != nullptr) v += static_cast<float>(y[i % ylen]);
    out[i] = static_cast<T>(act<OP, (sizeof(T) == 2)>(v));
  }
}

// out = act(x + y) with x (rows, cols) and y (cols,): grid (column packs, rows), so no
// division or modulo per element; cols % N == 0 and 16-byte aligned.
template <typename T, int OP, int N>
__global__ void rowwise_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                               int64_t cols) {
  using P = Pack<T, N>;
  const int64_t col = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * N;
  if (col >= cols) return;
  const int64_t i = blockIdx.y * cols + col;
  P xv = *reinterpret_cast<const P*>(x + i);
  P yv = *reinterpret_cast<const P*>(y + col);
  P o;
#pragma unroll
  for (int k = 0; k < N; k++)
    o.v[k] = static_cast<T>(act<OP, (sizeof(T) == 2)>(static_cast<float>(xv.v[k]) + static_cast<float>(yv.v[k])));
  *reinterpret_cast<P*>(out + i) = o;
}

template <int OP>
torch::Tensor pointwise(torch::Tensor x, c10::optional<torch::Tensor> y_opt) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  torch::Tensor y;
  if (y_opt.has_value()) {
    y = y_opt->contiguous();
    TORCH_CHECK(y.scalar_type() == x.scalar_type(), "x and y must have the same dtype");
    TORCH_CHECK(y.numel() == x.numel() || (y.dim() == 1 && y.numel() == x.size(-1)),
                "y must have x's shape or be a vector of x's last axis");
  }
  auto out = torch::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return out;
  const int64_t ylen = y.defined() ? y.numel() : 1;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "pointwise", [&] {
    constexpr int N = 16 / sizeof(scalar_t);
    const scalar_t* yp = y.defined() ? y.data_ptr<scalar_t>() : nullptr;
    const bool vec = aligned16(x.data_ptr()) && aligned16(out.data_ptr()) &&
                     (yp == nullptr || (aligned16(yp) && ylen % N == 0));
    const int threads = 256;
    const int64_t rows = n / ylen;
    if (vec && yp != nullptr && ylen != n && rows <= 65535) {
      const int t = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(32, ylen / N)));
      rowwise_kernel<scalar_t, OP, N><<<dim3(cdiv(ylen / N, t), rows), t, 0, stream>>>(
          x.data_ptr<scalar_t>(), yp, out.data_ptr<scalar_t>(), ylen);
    } else if (vec) {
      pointwise_kernel<scalar_t, OP, N><<<cdiv(std::max<int64_t>(n / N, N), threads), threads, 0, stream>>>(
          x.data_ptr<scalar_t>(), yp, out.data_ptr<scalar_t>(), n, ylen);
    } else {
      pointwise_kernel<scalar_t, OP, 1><<<cdiv(n, threads), threads, 0, stream>>>(
          x.data_ptr<scalar_t>(), yp, out.data_ptr<scalar_t>(), n, ylen);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

// dx = g act'(x [+ y]), y of x's numel or absent; N elements per thread (16 bytes)
template <typename T, int OP, int N>
__global__ void pointwise_bwd_kernel(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ y,
                                     T* __restrict__ dx, int64_t n) {
  using P = Pack<T, N>;
  constexpr bool HALF = sizeof(T) == 2;
  const int64_t npack = n / N;
  const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (p < npack) {
    P gv = reinterpret_cast<const P*>(g)[p];
    P xv = reinterpret_cast<const P*>(x)[p];
    P yv;
    if (y != nullptr) yv = reinterpret_cast<const P*>(y)[p];
    P o;
#pragma unroll
    for (int k = 0; k < N; k++) {
      float v = static_cast<float>(xv.v[k]);
      if (y != nullptr) v += static_cast<float>(yv.v[k]);
      o.v[k] = static_cast<T>(static_cast<float>(gv.v[k]) * act_grad<OP, HALF>(v));
    }
    reinterpret_cast<P*>(dx)[p] = o;
  }
  // the tail that does not fill a pack (only when N > 1)
  const int64_t i = npack * N + p;
  if (N > 1 && p < N && i < n) {
    float v = static_cast<float>(x[i]);
    if (y != nullptr) v += static_cast<float>(y[i]);
    dx[i] = static_cast<T>(static_cast<float>(g[i]) * act_grad<OP, HALF>(v));
  }
}

// The column sums of a block's threads: thread (tx, ty) holds acc[k] for the block's
// column tx N + k (k < N, NG groups of width blockDim.x N); they are summed over ty through
// smem (blockDim.y NG N blockDim.x floats, conflict-free) and written to part's row
// blockIdx.y at seg0 + g seg_stride + column, for columns < limit.
template <int N, int NG>
__device__ __forceinline__ void block_column_sums(const float (&acc)[NG][N], float* smem, float* __restrict__ part,
                                                  int64_t ld, int64_t seg0, int64_t seg_stride, int64_t limit) {
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
  const int width = NG * N * TX;  // floats per ty slab: slot (g N + k) TX + tx
#pragma unroll
  for (int g = 0; g < NG; g++)
#pragma unroll
    for (int k = 0; k < N; k++) smem[ty * width + (g * N + k) * TX + tx] = acc[g][k];
  __syncthreads();
  for (int j = ty * TX + tx; j < width; j += TX * TY) {
    float s = 0.0f;
    for (int u = 0; u < TY; u++) s += smem[u * width + j];
    const int t = j % TX, k = (j / TX) % N, g = j / (TX * N);
    const int64_t col = seg0 + t * N + k;  // seg0: the block's first column
    if (col < limit) part[blockIdx.y * ld + g * seg_stride + col] = s;
  }
}

// The last block of a column block (counter: blocks of the column block done so far)
// sums part's gridDim.y rows for that block's columns, in a fixed order, and writes them to
// out in T; it resets the counter, so the counters stay zero between launches. Columns:
// seg0 + g seg_stride + c for g < NG, c < seg_width, seg0 + c < limit.
template <typename T, int NG>
__device__ __forceinline__ void last_block_sums(const float* __restrict__ part, int64_t ld, int64_t seg0,
                                                int64_t seg_stride, int seg_width, int64_t limit, int* counter,
                                                T* __restrict__ out) {
  __shared__ bool last;
  __threadfence();  // this block's partial row, before the count that publishes it
  __syncthreads();
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  if (tid == 0) last = atomicAdd(counter, 1) == static_cast<int>(gridDim.y) - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int groups = gridDim.y;
  for (int j = tid; j < NG * seg_width; j += nthreads) {
    const int g = j / seg_width, c = j % seg_width;
    if (seg0 + c >= limit) continue;
    const float* p = part + seg0 + g * seg_stride + c;
    float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int r = 0;
    for (; r + 8 <= groups; r += 8) {  // eight loads in flight
#pragma unroll
      for (int u = 0; u < 8; u++) s[u] += __ldcg(p + (r + u) * ld);
    }
    for (; r < groups; r++) s[0] += __ldcg(p + r * ld);
    out[seg0 + g * seg_stride + c] = static_cast<T>(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
  }
  if (tid == 0) *counter = 0;
}

// dx = g act'(x + y) with x, g (rows, cols) and y (cols,), and dy = the sum of dx over the
// rows, in one launch. Block (TX, TY) over TX N columns; grid (column blocks, row groups),
// one wave (sized from the kernel's occupancy): row group j takes rows j TY + ty,
// (j + groups) TY + ty, ... Each thread keeps its columns' sums in registers (fp32) for all
// its rows; at the end the block sums them over ty into the group's partial row of
// dy_part (groups, cols), and the column block's last block sums those rows into dy.
// 16-byte loads and stores (N elements); cols % N == 0 and 16-byte aligned (N = 1: any);
// the next row's g and x are loaded before this row's math, so loads stay in flight
// through it. The grid is one wave: a grid of 1.6 waves (its blocks sized by hand, not by
// the occupancy) leaves most SMs idle in the last 0.6 (ncu, H100, bf16: 80% of peak DRAM
// throughput), and a separate sum of many partial rows (264 x cols fp32, then a cast)
// adds 14 us to a 140 us kernel.
template <typename T, int OP, int N>
__global__ void __launch_bounds__(256) rowwise_bwd_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                                          const T* __restrict__ y, T* __restrict__ dx,
                                                          float* __restrict__ dy_part, int* __restrict__ counters,
                                                          T* __restrict__ dy, int64_t rows, int64_t cols) {
  using P = Pack<T, N>;
  constexpr bool HALF = sizeof(T) == 2;
  extern __shared__ float smem[];
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * blockDim.x * N, col = col0 + threadIdx.x * N;
  float acc[1][N];
#pragma unroll
  for (int k = 0; k < N; k++) acc[0][k] = 0.0f;
  if (col < cols) {
    const P yv = *reinterpret_cast<const P*>(y + col);
    const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.y;
    int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    P gv, xv;  // the current row's g and x; the next row's are loaded before this one's math
    if (r < rows) {
      gv = *reinterpret_cast<const P*>(g + r * cols + col);
      xv = *reinterpret_cast<const P*>(x + r * cols + col);
    }
    for (; r < rows; r += step) {
      const int64_t i = r * cols + col, next = i + step * cols;
      P gn, xn;
      if (r + step < rows) {
        gn = *reinterpret_cast<const P*>(g + next);
        xn = *reinterpret_cast<const P*>(x + next);
      }
      P o;
#pragma unroll
      for (int k = 0; k < N; k++) {
        const float d = static_cast<float>(gv.v[k]) *
                        act_grad<OP, HALF>(static_cast<float>(xv.v[k]) + static_cast<float>(yv.v[k]));
        o.v[k] = static_cast<T>(d);
        acc[0][k] += d;
      }
      *reinterpret_cast<P*>(dx + i) = o;
      gv = gn;
      xv = xn;
    }
  }
  block_column_sums<N, 1>(acc, smem, dy_part, cols, col0, 0, cols);
  last_block_sums<T, 1>(dy_part, cols, col0, 0, blockDim.x * N, cols, counters + blockIdx.x, dy);
}

// zeroed int32 counters (at least n) for last_block_sums, one buffer per device and
// stream (launches on one stream run in order); never freed
inline int* block_counters(int64_t n, const torch::Device& device) {
  static std::mutex mutex;
  static auto* buffers = new std::map<std::pair<int, cudaStream_t>, torch::Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  auto& buf = (*buffers)[{device.index(), at::cuda::getCurrentCUDAStream().stream()}];
  if (!buf.defined() || buf.numel() < n)
    buf = torch::zeros({std::max<int64_t>(n, 1024)}, torch::dtype(torch::kInt).device(device));
  return buf.data_ptr<int>();
}

// row groups of a column reduction: at most one wave of blocks (the kernel's occupancy on
// every SM), at most one per row tile, and the fewest that give the same most tiles each
template <typename K>
int64_t row_groups(K kernel, int threads, size_t smem, int64_t col_blocks, int64_t row_tiles) {
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>({row_tiles, sms * std::max(per_sm, 1) / col_blocks,
                                                                65535}));
  return cdiv(row_tiles, cdiv(row_tiles, most));
}

inline int pow2_at_most(int64_t v, int cap) {
  int p = 1;
  while (p < cap && p < v) p *= 2;
  return p;
}

template <typename T, int OP, int N>
void launch_rowwise_bwd(const T* g, const T* x, const T* y, T* dx, T* dy, int64_t rows, int64_t cols,
                        const torch::Tensor& like, cudaStream_t stream) {
  const int64_t packs = cols / N;
  const int tx = pow2_at_most(packs, 32), ty = 256 / tx;
  const int64_t col_blocks = cdiv(packs, tx);
  const size_t smem = static_cast<size_t>(tx) * ty * N * sizeof(float);
  const int64_t groups = row_groups(rowwise_bwd_kernel<T, OP, N>, tx * ty, smem, col_blocks, cdiv(rows, ty));
  auto part = torch::empty({groups, cols}, like.options().dtype(torch::kFloat));
  rowwise_bwd_kernel<T, OP, N><<<dim3(col_blocks, groups), dim3(tx, ty), smem, stream>>>(
      g, x, y, dx, part.data_ptr<float>(), block_counters(col_blocks, like.device()), dy, rows, cols);
}

// {dx, dy}: dy is dx for a y of x's numel, the sum of dx over the rows for a bias, absent
// without y
template <int OP>
std::vector<torch::Tensor> pointwise_backward(torch::Tensor g, torch::Tensor x, c10::optional<torch::Tensor> y_opt) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
  TORCH_CHECK(g.is_cuda() && g.is_contiguous() && g.sizes() == x.sizes() && g.scalar_type() == x.scalar_type(),
              "the gradient must be a contiguous CUDA tensor of x's shape and dtype");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  torch::Tensor y;
  if (y_opt.has_value()) {
    y = y_opt->contiguous();
    TORCH_CHECK(y.scalar_type() == x.scalar_type(), "x and y must have the same dtype");
    TORCH_CHECK(y.numel() == x.numel() || (y.dim() == 1 && y.numel() == x.size(-1)),
                "y must have x's shape or be a vector of x's last axis");
  }
  auto dx = torch::empty_like(x);
  const int64_t n = x.numel();
  const bool bias = y.defined() && y.numel() != n;
  if (n == 0) {
    if (!y.defined()) return {dx};
    return {dx, bias ? torch::zeros_like(y) : dx};
  }
  auto stream = at::cuda::getCurrentCUDAStream();
  torch::Tensor dy = bias ? torch::empty_like(y) : torch::Tensor();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "pointwise_backward", [&] {
    constexpr int N = 16 / sizeof(scalar_t);
    const scalar_t* yp = y.defined() ? y.data_ptr<scalar_t>() : nullptr;
    const bool vec = aligned16(g.data_ptr()) && aligned16(x.data_ptr()) && aligned16(dx.data_ptr()) &&
                     (yp == nullptr || aligned16(yp));
    if (bias) {
      const int64_t cols = y.numel(), rows = n / cols;
      if (vec && cols % N == 0) {
        launch_rowwise_bwd<scalar_t, OP, N>(g.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), yp,
                                            dx.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(), rows, cols, x, stream);
      } else {
        launch_rowwise_bwd<scalar_t, OP, 1>(g.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), yp,
                                            dx.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(), rows, cols, x, stream);
      }
    } else {
      const int threads = 256;
      if (vec) {
        pointwise_bwd_kernel<scalar_t, OP, N><<<cdiv(std::max<int64_t>(n / N, N), threads), threads, 0, stream>>>(
            g.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), yp, dx.data_ptr<scalar_t>(), n);
      } else {
        pointwise_bwd_kernel<scalar_t, OP, 1><<<cdiv(n, threads), threads, 0, stream>>>(
            g.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), yp, dx.data_ptr<scalar_t>(), n);
      }
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if (!y.defined()) return {dx};
  return {dx, bias ? dy : dx};
}

template <typename Red>
__device__ __forceinline__ float block_reduce(float v, float* smem, Red red, float identity) {
  for (int o = 16; o > 0; o >>= 1) v = red(v, __shfl_xor_sync(0xffffffff, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  __syncthreads();  // smem may still be read from a previous reduction
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < nwarps ? smem[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = red(v, __shfl_xor_sync(0xffffffff, v, o));
  return v;
}

// One block per row; the row stays in registers (MAXP packs per thread), so HBM sees one
// read and one write of it.
template <typename T, int N, int MAXP>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t ncols) {
  using P = Pack<T, N>;
  __shared__ float smem[32];
  const int64_t npack = ncols / N;
  const P* xr = reinterpret_cast<const P*>(x + blockIdx.x * ncols);
  P* outr = reinterpret_cast<P*>(out + blockIdx.x * ncols);
  float v[MAXP][N];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int64_t p = threadIdx.x + (int64_t)j * blockDim.x;
    if (p < npack) {
      P xv = xr[p];
#pragma unroll
      for (int k = 0; k < N; k++) { v[j][k] = static_cast<float>(xv.v[k]); m = fmaxf(m, v[j][k]); }
    }
  }
  m = block_reduce(m, smem, [](float a, float b) { return fmaxf(a, b); }, -INFINITY);
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int64_t p = threadIdx.x + (int64_t)j * blockDim.x;
    if (p < npack) {
#pragma unroll
      for (int k = 0; k < N; k++) { v[j][k] = __expf(v[j][k] - m); s += v[j][k]; }
    }
  }
  s = block_reduce(s, smem, [](float a, float b) { return a + b; }, 0.0f);
  const float inv = 1.0f / s;
#pragma unroll
  for (int j = 0; j < MAXP; j++) {
    const int64_t p = threadIdx.x + (int64_t)j * blockDim.x;
    if (p < npack) {
      P o;
#pragma unroll
      for (int k = 0; k < N; k++) o.v[k] = static_cast<T>(v[j][k] * inv);
      outr[p] = o;
    }
  }
}

torch::Tensor softmax(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  auto out = torch::empty_like(x);
  const int64_t ncols = x.size(-1), rows = x.numel() / std::max<int64_t>(ncols, 1);
  if (x.numel() == 0) return out;
  auto stream = at::cuda::getCurrentCUDAStream();
  bool done = false;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "softmax", [&] {
    constexpr int N = 16 / sizeof(scalar_t);
    constexpr int MAXP = 4;
    const int64_t npack = ncols / N;
    if (ncols % N == 0 && aligned16(x.data_ptr()) && aligned16(out.data_ptr()) && npack <= 1024 * MAXP) {
      int threads = 32;
      while (threads < 1024 && threads * MAXP < npack) threads *= 2;
      if (threads < 128 && npack >= 128) threads = 128;
      softmax_kernel<scalar_t, N, MAXP><<<rows, threads, 0, stream>>>(
          x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), ncols);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      done = true;
    }
  });
  TORCH_CHECK(done, "softmax kernel: the last axis (", ncols, ") must be a multiple of 16 bytes and at most ",
              "4096 x 16 bytes long");
  return out;
}

// grid (column packs, rows): no division or modulo per element; N columns per thread
template <typename T, int N>
__global__ void lstm_kernel(const T* __restrict__ gx, const T* __restrict__ gh, const T* __restrict__ b,
                            const T* __restrict__ c, T* __restrict__ h_out, T* __restrict__ c_out, int64_t H) {
  using P = Pack<T, N>;
  const int64_t col = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * N;
  if (col >= H) return;
  const int64_t row = blockIdx.y;
  const int64_t g0 = row * 4 * H + col, i = row * H + col;
  float g[4][N];
#pragma unroll
  for (int k = 0; k < 4; k++) {
    P xv = *reinterpret_cast<const P*>(gx + g0 + k * H);
    P hv = *reinterpret_cast<const P*>(gh + g0 + k * H);
    P bv = *reinterpret_cast<const P*>(b + col + k * H);
#pragma unroll
    for (int e = 0; e < N; e++)
      g[k][e] = static_cast<float>(xv.v[e]) + static_cast<float>(hv.v[e]) + static_cast<float>(bv.v[e]);
  }
  P cv = *reinterpret_cast<const P*>(c + i);
  P ho, co;
#pragma unroll
  for (int e = 0; e < N; e++) {
    constexpr bool HALF = sizeof(T) == 2;
    const float c_new = sigmoid_of<HALF>(g[1][e]) * static_cast<float>(cv.v[e]) +
                        sigmoid_of<HALF>(g[0][e]) * tanh_of<HALF>(g[2][e]);
    co.v[e] = static_cast<T>(c_new);
    ho.v[e] = static_cast<T>(sigmoid_of<HALF>(g[3][e]) * tanh_of<HALF>(c_new));
  }
  *reinterpret_cast<P*>(c_out + i) = co;
  *reinterpret_cast<P*>(h_out + i) = ho;
}

std::vector<torch::Tensor> lstm_gates(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c) {
  for (auto* t : {&gx, &gh, &bias, &c})
    TORCH_CHECK(t->is_cuda() && t->is_contiguous(), "inputs must be contiguous CUDA tensors");
  const at::cuda::OptionalCUDAGuard guard(c.device());
  const int64_t B = c.size(0), H = c.size(1), n = B * H;  // n == 0: nothing to launch
  TORCH_CHECK(gx.size(0) == B && gx.size(1) == 4 * H && gh.sizes() == gx.sizes() && bias.numel() == 4 * H,
              "expected gx, gh (B, 4H), bias (4H), c (B, H)");
  auto h_out = torch::empty_like(c), c_out = torch::empty_like(c);
  if (n == 0) return {h_out, c_out};
  auto stream = at::cuda::getCurrentCUDAStream();
  TORCH_CHECK(B <= 65535, "lstm_gates: batch ", B, " > 65535 (grid y)");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, c.scalar_type(), "lstm_gates", [&] {
    constexpr int N = 16 / sizeof(scalar_t);
    const bool vec = H % N == 0 && aligned16(gx.data_ptr()) && aligned16(gh.data_ptr()) &&
                     aligned16(bias.data_ptr()) && aligned16(c.data_ptr()) && aligned16(h_out.data_ptr()) &&
                     aligned16(c_out.data_ptr());
    const int threads = 128;
    if (vec) {
      lstm_kernel<scalar_t, N><<<dim3(cdiv(H / N, threads), B), threads, 0, stream>>>(
          gx.data_ptr<scalar_t>(), gh.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(),
          h_out.data_ptr<scalar_t>(), c_out.data_ptr<scalar_t>(), H);
    } else {
      lstm_kernel<scalar_t, 1><<<dim3(cdiv(H, threads), B), threads, 0, stream>>>(
          gx.data_ptr<scalar_t>(), gh.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(),
          h_out.data_ptr<scalar_t>(), c_out.data_ptr<scalar_t>(), H);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {h_out, c_out};
}

// The gradients of lstm_kernel's (h, c'), its gates recomputed (reference.py derives them):
// dgates (B, 4H), the gradient of gx and gh alike, dc_prev (B, H), and db = the sum of
// dgates over the rows, in one launch. Block (TX, TY) over TX N columns of each gate; grid
// (column blocks, row groups), one wave: row group j takes rows j TY + ty, (j + groups)
// TY + ty, ... Each thread keeps its columns' sums of the four gates' gradients in
// registers (fp32); at the end the block sums them over ty into the group's partial row
// of db_part (groups, 4H), and the column block's last block sums those rows into db.
// 4 elements a thread (8 bytes in bf16) keep the registers under 100 (two blocks of 256
// per SM); 32 threads across a row read 256 contiguous bytes of each gate in bf16 (128: 82%
// of peak DRAM throughput in ncu, H100). One row group per row (2112 partial rows of 4H
// fp32, summed by torch afterwards) moves 69 MB more than the 537 MB of the kernel.
template <typename T, int N>
__global__ void __launch_bounds__(256) lstm_bwd_kernel(
    const T* __restrict__ gx, const T* __restrict__ gh, const T* __restrict__ b, const T* __restrict__ c,
    const T* __restrict__ dh, const T* __restrict__ dc, T* __restrict__ dgates, T* __restrict__ dc_prev,
    float* __restrict__ db_part, int* __restrict__ counters, T* __restrict__ db, int64_t B, int64_t H) {
  using P = Pack<T, N>;
  constexpr bool HALF = sizeof(T) == 2;
  extern __shared__ float smem[];
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * blockDim.x * N, col = col0 + threadIdx.x * N;
  float acc[4][N];
#pragma unroll
  for (int k = 0; k < 4; k++)
#pragma unroll
    for (int e = 0; e < N; e++) acc[k][e] = 0.0f;
  if (col < H) {
    P bias[4];
#pragma unroll
    for (int k = 0; k < 4; k++) bias[k] = *reinterpret_cast<const P*>(b + col + k * H);
    const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < B; row += step) {
      const int64_t g0 = row * 4 * H + col, i = row * H + col;
      float g[4][N];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        P xv = *reinterpret_cast<const P*>(gx + g0 + k * H);
        P hv = *reinterpret_cast<const P*>(gh + g0 + k * H);
#pragma unroll
        for (int e = 0; e < N; e++)
          g[k][e] = static_cast<float>(xv.v[e]) + static_cast<float>(hv.v[e]) + static_cast<float>(bias[k].v[e]);
      }
      P cv = *reinterpret_cast<const P*>(c + i);
      P dhv = *reinterpret_cast<const P*>(dh + i);
      P dcv = *reinterpret_cast<const P*>(dc + i);
      P dgo[4], dco;
#pragma unroll
      for (int e = 0; e < N; e++) {
        const float si = sigmoid_of<HALF>(g[0][e]), sf = sigmoid_of<HALF>(g[1][e]);
        const float tg = tanh_of<HALF>(g[2][e]), so = sigmoid_of<HALF>(g[3][e]);
        const float cc = static_cast<float>(cv.v[e]), dhe = static_cast<float>(dhv.v[e]);
        const float tc = tanh_of<HALF>(sf * cc + si * tg);
        const float dct = static_cast<float>(dcv.v[e]) + dhe * so * (1.0f - tc * tc);
        const float d[4] = {dct * tg * si * (1.0f - si), dct * cc * sf * (1.0f - sf), dct * si * (1.0f - tg * tg),
                            dhe * tc * so * (1.0f - so)};
#pragma unroll
        for (int k = 0; k < 4; k++) {
          dgo[k].v[e] = static_cast<T>(d[k]);
          acc[k][e] += d[k];
        }
        dco.v[e] = static_cast<T>(dct * sf);
      }
#pragma unroll
      for (int k = 0; k < 4; k++) *reinterpret_cast<P*>(dgates + g0 + k * H) = dgo[k];
      *reinterpret_cast<P*>(dc_prev + i) = dco;
    }
  }
  block_column_sums<N, 4>(acc, smem, db_part, 4 * H, col0, H, H);
  last_block_sums<T, 4>(db_part, 4 * H, col0, H, blockDim.x * N, H, counters + blockIdx.x, db);
}

std::vector<torch::Tensor> lstm_backward(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c,
                                         torch::Tensor dh, torch::Tensor dc) {
  for (auto* t : {&gx, &gh, &bias, &c, &dh, &dc})
    TORCH_CHECK(t->is_cuda() && t->is_contiguous(), "inputs must be contiguous CUDA tensors");
  const at::cuda::OptionalCUDAGuard guard(c.device());
  const int64_t B = c.size(0), H = c.size(1);
  TORCH_CHECK(gx.size(0) == B && gx.size(1) == 4 * H && gh.sizes() == gx.sizes() && bias.numel() == 4 * H &&
              dh.sizes() == c.sizes() && dc.sizes() == c.sizes(),
              "expected gx, gh (B, 4H), bias (4H), c, dh, dc (B, H)");
  auto dgates = torch::empty_like(gx), dc_prev = torch::empty_like(c), db = torch::empty_like(bias);
  if (B * H == 0) return {dgates, db.zero_(), dc_prev};
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, c.scalar_type(), "lstm_backward", [&] {
    constexpr int N = sizeof(scalar_t) <= 4 ? 4 : 2;  // 4 elements a thread: 8 or 16 bytes
    const bool vec = H % N == 0 && aligned(gx.data_ptr(), N * sizeof(scalar_t)) &&
                     aligned(gh.data_ptr(), N * sizeof(scalar_t)) && aligned(bias.data_ptr(), N * sizeof(scalar_t)) &&
                     aligned(c.data_ptr(), N * sizeof(scalar_t)) && aligned(dh.data_ptr(), N * sizeof(scalar_t)) &&
                     aligned(dc.data_ptr(), N * sizeof(scalar_t)) && aligned(dgates.data_ptr(), N * sizeof(scalar_t)) &&
                     aligned(dc_prev.data_ptr(), N * sizeof(scalar_t));
    auto launch = [&](auto kernel, int n) {
      const int64_t packs = H / n;
      const int tx = pow2_at_most(packs, 32), ty = 256 / tx;
      const int64_t col_blocks = cdiv(packs, tx);
      const size_t smem = static_cast<size_t>(ty) * 4 * n * tx * sizeof(float);
      const int64_t groups = row_groups(kernel, tx * ty, smem, col_blocks, cdiv(B, ty));
      auto part = torch::empty({groups, 4 * H}, c.options().dtype(torch::kFloat));
      kernel<<<dim3(col_blocks, groups), dim3(tx, ty), smem, stream>>>(
          gx.data_ptr<scalar_t>(), gh.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(),
          dh.data_ptr<scalar_t>(), dc.data_ptr<scalar_t>(), dgates.data_ptr<scalar_t>(),
          dc_prev.data_ptr<scalar_t>(), part.data_ptr<float>(), block_counters(col_blocks, c.device()),
          db.data_ptr<scalar_t>(), B, H);
    };
    if (vec) launch(lstm_bwd_kernel<scalar_t, N>, N);
    else launch(lstm_bwd_kernel<scalar_t, 1>, 1);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {dgates, db, dc_prev};
}

}  // namespace

torch::Tensor gelu(torch::Tensor x, bool approx_tanh) {
  return approx_tanh ? pointwise<GELU_TANH>(x, c10::nullopt) : pointwise<GELU_ERF>(x, c10::nullopt);
}

torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias, bool approx_tanh) {
  return approx_tanh ? pointwise<GELU_TANH>(x, bias) : pointwise<GELU_ERF>(x, bias);
}

torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) { return pointwise<RELU>(x, y); }

// backward: {dx} for gelu, {dx, dbias} for bias_gelu, {dx, dy} for add_relu (dy: the sum
// over rows for a y broadcast along them)
std::vector<torch::Tensor> gelu_backward(torch::Tensor g, torch::Tensor x, bool approx_tanh) {
  return approx_tanh ? pointwise_backward<GELU_TANH>(g, x, c10::nullopt) : pointwise_backward<GELU_ERF>(g, x, c10::nullopt);
}

std::vector<torch::Tensor> bias_gelu_backward(torch::Tensor g, torch::Tensor x, torch::Tensor bias, bool approx_tanh) {
  return approx_tanh ? pointwise_backward<GELU_TANH>(g, x, bias) : pointwise_backward<GELU_ERF>(g, x, bias);
}

std::vector<torch::Tensor> add_relu_backward(torch::Tensor g, torch::Tensor x, torch::Tensor y) {
  return pointwise_backward<RELU>(g, x, y);
}

torch::Tensor softmax_rows(torch::Tensor x) { return softmax(x); }

std::vector<torch::Tensor> lstm_gates_fused(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c) {
  return lstm_gates(gx, gh, bias, c);
}

// {dgates, dbias, dc_prev}; dgates is the gradient of gx and of gh
std::vector<torch::Tensor> lstm_gates_backward(torch::Tensor gx, torch::Tensor gh, torch::Tensor bias, torch::Tensor c,
                                               torch::Tensor dh, torch::Tensor dc) {
  return lstm_backward(gx, gh, bias, c, dh, dc);
}
