// core/real.h — the CPU backend's number type: float in the product, double in the gradient-check build.
#pragma once
#include <math.h>

// glibc's vector math library (libmvec, linked through libm) has 8-wide expf and 4-wide exp, but
// math.h declares them only under -ffast-math, which would also break −inf masking. Declaring the
// SIMD variants here lets `omp simd` loops over rexp call them (measured: the scalar expf was 15% of
// CPU attention time; attention forward+backward went from 52 to 78 GFLOP/s on 2 cores).
#ifdef RINGGPT_F64
double exp(double) __attribute__((simd("notinbranch")));
#else
float expf(float) __attribute__((simd("notinbranch")));
#endif
// The CPU code is written once over `real`. CMake compiles it twice: ringgpt_core (float, the
// product) and ringgpt_core64 (-DRINGGPT_F64, double) so that finite-difference checks in double
// precision exercise exactly the code that ships.
#ifdef RINGGPT_F64
typedef double real;
#define REAL_NAME "f64"
#define cblas_xgemm cblas_dgemm
#define cblas_xgemv cblas_dgemv
#define rexp exp
#define rlog log
#define sqrt_r sqrt
#define rcos cos
#define rsin sin
#define rpow pow
#else
typedef float real;
#define REAL_NAME "f32"
#define cblas_xgemm cblas_sgemm
#define cblas_xgemv cblas_sgemv
#define rexp expf
#define rlog logf
#define sqrt_r sqrtf
#define rcos cosf
#define rsin sinf
#define rpow powf
#endif
