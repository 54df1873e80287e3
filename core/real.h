// core/real.h — the CPU backend's number type: float in the product, double in the gradient-check build.
#pragma once
// The CPU code is written once over `real`. CMake compiles it twice: ringgpt_core (float, the
// product) and ringgpt_core64 (-DRINGGPT_F64, double) so that finite-difference checks in double
// precision exercise exactly the code that ships.
#ifdef RINGGPT_F64
typedef double real;
#define REAL_NAME "f64"
#define cblas_xgemm cblas_dgemm
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
#define rexp expf
#define rlog logf
#define sqrt_r sqrtf
#define rcos cosf
#define rsin sinf
#define rpow powf
#endif
