"""Special functions by their textbook numerics: accurate to float32 rounding, not bit-exact.

Lanczos lgamma, digamma's asymptotic series, Euler-Maclaurin for the Hurwitz zeta and
polygamma, Giles' erfinv with a Newton step, Chebyshev polynomials (torch's recurrence, then
closed forms), Hermite, Laguerre and Legendre polynomials (the recurrence unrolled to degree
128), and Cephes' expansions of the modified Bessel functions as torch has them.

Written in plain torch ops for ops torch decomposes into nothing the exporter converts; the
decomposition replay traces them like ``torch._decomp``'s (see
:mod:`fixport.symbolics.synthesis.decomposition`). Add your own the same way:
``SPECIAL_DECOMPOSITIONS[torch.ops.aten.<op>.<overload>] = function``.
Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61503916999185, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _lgamma_right(z: torch.Tensor) -> torch.Tensor:
    """log|Gamma(z)| for z >= 0.5 (Lanczos)."""
    z = z - 1
    series = torch.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * torch.log(t) - t + torch.log(series)


def lgamma(x: torch.Tensor) -> torch.Tensor:
    left = x < 0.5
    right = _lgamma_right(torch.where(left, 1 - x, x))
    # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    reflected = math.log(math.pi) - torch.log(torch.abs(torch.sin(math.pi * x))) - right
    return torch.where(left, reflected, right)


_DIGAMMA_SHIFT = 6
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132)  # Bernoulli terms of the asymptotic series


def _digamma_right(x: torch.Tensor) -> torch.Tensor:
    """digamma(x) for x > 0: shift past 6, then the asymptotic series."""
    total = torch.zeros_like(x)
    for k in range(_DIGAMMA_SHIFT):
        total = total + 1 / (x + k)
    y = x + _DIGAMMA_SHIFT
    inverse_square = 1 / (y * y)
    series, power = torch.zeros_like(x), inverse_square
    for coefficient in _DIGAMMA_SERIES:
        series = series + coefficient * power
        power = power * inverse_square
    return torch.log(y) - 0.5 / y - series - total


def digamma(x: torch.Tensor) -> torch.Tensor:
    left = x <= 0
    right = _digamma_right(torch.where(left, 1 - x, x))
    reflected = right - math.pi / torch.tan(math.pi * x)  # digamma(1 - x) - pi cot(pi x)
    result = torch.where(left, reflected, right)
    return torch.where(x == 0, torch.full_like(x, -math.inf), result)


_ZETA_TERMS = 9  # terms summed before the Euler-Maclaurin tail, for q > 0
_POLYGAMMA_TERMS = 30  # polygamma sums from x itself, which may be negative: accurate for x > -20
_BERNOULLI_OVER_FACTORIAL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000)


def _hurwitz_zeta(s: torch.Tensor, q: torch.Tensor, terms: int = _ZETA_TERMS) -> torch.Tensor:
    """sum over k >= 0 of (q + k)^-s for s > 1: ``terms`` terms, then the Euler-Maclaurin tail
    (which needs q + terms well above zero)."""
    total = torch.zeros_like(q + s)
    for k in range(terms):
        total = total + torch.pow(q + k, -s)
    a = q + terms
    total = total + torch.pow(a, 1 - s) / (s - 1) + 0.5 * torch.pow(a, -s)
    rising, power = s, torch.pow(a, -s - 1)
    for j, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL):
        total = total + coefficient * rising * power
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
        power = power / (a * a)
    return total


def zeta(s: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    result = _hurwitz_zeta(s, q)
    result = torch.where(s == 1, torch.full_like(result, math.inf), result)
    return torch.where((s < 1) | (q <= 0), torch.full_like(result, math.nan), result)


def polygamma(n: int, x: torch.Tensor) -> torch.Tensor:
    if n == 0:
        return digamma(x)
    scale = (-1) ** (n + 1) * math.factorial(n)
    return scale * _hurwitz_zeta(torch.full_like(x, n + 1.0), x, _POLYGAMMA_TERMS)


_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _polynomial(coefficients: tuple[float, ...], w: torch.Tensor) -> torch.Tensor:
    result = torch.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        result = result * w + c
    return result


def erfinv(y: torch.Tensor) -> torch.Tensor:
    """Giles' single-precision approximation, then one Newton step on erf."""
    w = -torch.log((1 - y) * (1 + y))
    central = _polynomial(_ERFINV_CENTRAL, w - 2.5)
    tail = _polynomial(_ERFINV_TAIL, torch.sqrt(w) - 3)
    x = torch.where(w < 5, central, tail) * y
    x = x - (torch.erf(x) - y) / (2 / math.sqrt(math.pi) * torch.exp(-x * x))
    edge = torch.where(y > 0, torch.full_like(y, math.inf), torch.full_like(y, -math.inf))
    x = torch.where(torch.abs(y) == 1, edge, x)
    return torch.where(torch.abs(y) > 1, torch.full_like(y, math.nan), x)


def ndtri(p: torch.Tensor) -> torch.Tensor:
    return math.sqrt(2) * erfinv(2 * p - 1)


# ---- Chebyshev polynomials T, U, V, W (and the shifted ones, of 2x - 1) of a tensor degree n:
# torch's recurrence for degrees up to _CHEBYSHEV_RECURRENCE, closed forms beyond (trigonometric
# inside [-1, 1], hyperbolic outside), which is what the recurrence converges to.
_CHEBYSHEV_RECURRENCE = 8
_CHEBYSHEV_START = {"t": (1.0, 0.0), "u": (2.0, 0.0), "v": (2.0, -1.0), "w": (2.0, 1.0)}  # p1 = a x + b


def _chebyshev_closed(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    theta = torch.acos(torch.clamp(x, -1.0, 1.0))
    inside = {"t": torch.cos(n * theta), "u": torch.sin((n + 1) * theta) / torch.sin(theta),
              "v": torch.cos((n + 0.5) * theta) / torch.cos(theta / 2),
              "w": torch.sin((n + 0.5) * theta) / torch.sin(theta / 2)}[kind]
    t = torch.acosh(torch.clamp(torch.abs(x), min=1.0))
    odd = torch.remainder(n, 2) == 1
    flip = torch.where((x < 0) & odd, -1.0, 1.0).to(x.dtype)
    grows, half = {"t": (torch.cosh(n * t), None), "u": (torch.sinh((n + 1) * t) / torch.sinh(t), None),
                   "v": (torch.cosh((n + 0.5) * t) / torch.cosh(t / 2), torch.sinh((n + 0.5) * t) / torch.sinh(t / 2)),
                   "w": (torch.sinh((n + 0.5) * t) / torch.sinh(t / 2),
                         torch.cosh((n + 0.5) * t) / torch.cosh(t / 2))}[kind]
    outside = grows if half is None else torch.where(x > 0, grows, half)  # V(-x) = (-1)^n W(x)
    return torch.where(torch.abs(x) < 1, inside, flip * outside)


def _chebyshev_at_one(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """torch's values at x = +-1 (where the closed forms divide by zero)."""
    odd = torch.remainder(n, 2) == 1
    sign = torch.where(odd, -1.0, 1.0).to(x.dtype)
    positive, negative = {"t": (torch.ones_like(n), sign), "u": (n + 1, sign * (n + 1)),
                          "v": (torch.ones_like(n), sign * (2 * n + 1)), "w": (2 * n + 1, sign)}[kind]
    return torch.where(x > 0, positive, negative)


def _chebyshev(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    n = torch.trunc(torch.as_tensor(n, dtype=x.dtype))
    a, b = _CHEBYSHEV_START[kind]
    previous, current = torch.ones_like(x), a * x + b
    result = torch.where(n == 0, previous, _chebyshev_closed(kind, x, n))
    result = torch.where(n == 1, current, result)
    for degree in range(2, _CHEBYSHEV_RECURRENCE + 1):
        previous, current = current, 2 * x * current - previous
        result = torch.where(n == degree, current, result)
    result = torch.where(torch.abs(x) == 1, _chebyshev_at_one(kind, x, n), result)
    return torch.where(n < 0, torch.zeros_like(result), result)


def _chebyshev_op(kind: str, shifted: bool):
    def polynomial(x, n):
        x, n = torch.as_tensor(x), torch.as_tensor(n)
        dtype = torch.promote_types(x.dtype, n.dtype)
        x = x.to(dtype)
        return _chebyshev(kind, 2 * x - 1 if shifted else x, n.to(dtype))
    return polynomial


# ---- modified Bessel functions of the first kind: Cephes' Chebyshev expansions, as torch has them
# (ATen/native/Math.h), on [0, 8] and beyond.
_I0E_A = (  # 30 coefficients
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (  # 25 coefficients
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7, 2.89137052083475648297E-6,
    6.88975834691682398426E-5, 3.36911647825569408990E-3, 8.04490411014108831608E-1)
_I1E_A = (  # 29 coefficients
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (  # 25 coefficients
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)


def _chbevl(x: torch.Tensor, coefficients: tuple[float, ...]) -> torch.Tensor:
    b0, b1, b2 = torch.full_like(x, coefficients[0]), torch.zeros_like(x), torch.zeros_like(x)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel_scaled(x: torch.Tensor, small: tuple[float, ...], large: tuple[float, ...]) -> torch.Tensor:
    """exp(-|x|) I(|x|) over [0, 8] and (8, inf) (the order's 1/x factor left to the caller)."""
    a = torch.abs(x)
    near = _chbevl(a / 2 - 2, small)
    far = _chbevl(32 / torch.clamp(a, min=8.0) - 2, large) / torch.sqrt(torch.clamp(a, min=8.0))
    return torch.where(a <= 8, near, far)


def i0e(x: torch.Tensor) -> torch.Tensor:
    return _bessel_scaled(x, _I0E_A, _I0E_B)


def i0(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(torch.abs(x)) * i0e(x)


def i1e(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    scaled = _bessel_scaled(x, _I1E_A, _I1E_B)
    value = torch.where(a <= 8, scaled * a, scaled)  # the [0, 8] expansion is of exp(-x) I1(x) / x
    return torch.where(x < 0, -value, value)


def i1(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(torch.abs(x)) * i1e(x)


def spherical_bessel_j0(x: torch.Tensor) -> torch.Tensor:
    """sin(x) / x; its Taylor series near 0, as torch has it, and 0 at infinity."""
    square = x * x
    series = 1 - square / 6 * (1 - square / 20 * (1 - square / 42 * (1 - square / 72 * (1 - square / 110 * (
        1 - square / 156)))))
    value = torch.where(torch.abs(x) < 0.5, series, torch.sin(x) / x)
    return torch.where(torch.isinf(x), torch.zeros_like(x), value)


# Modified Bessel functions of the second kind, K0 and K1 (and exp(x)-scaled): Cephes' expansions
# of x^2 - 2 on (0, 2] and of 8/x - 2 beyond, as torch has them.
_K0_A = (  # 10 coefficients
    +1.37446543561352307156e-16, +4.25981614279661018399e-14, +1.03496952576338420167e-11,
    +1.90451637722020886025e-09, +2.53479107902614945675e-07, +2.28621210311945178607e-05,
    +1.26461541144692592338e-03, +3.59799365153615016266e-02, +3.44289899924628486886e-01,
    -5.35327393233902768720e-01)
_K0_B = (  # 25 coefficients
    +5.30043377268626276149e-18, -1.64758043015242134646e-17, +5.21039150503902756861e-17,
    -1.67823109680541210385e-16, +5.51205597852431940784e-16, -1.84859337734377901440e-15,
    +6.34007647740507060557e-15, -2.22751332699166985548e-14, +8.03289077536357521100e-14,
    -2.98009692317273043925e-13, +1.14034058820847496303e-12, -4.51459788337394416547e-12,
    +1.85594911495471785253e-11, -7.95748924447710747776e-11, +3.57739728140030116597e-10,
    -1.69753450938905987466e-09, +8.57403401741422608519e-09, -4.66048989768794782956e-08,
    +2.76681363944501510342e-07, -1.83175552271911948767e-06, +1.39498137188764993662e-05,
    -1.28495495816278026384e-04, +1.56988388573005337491e-03, -3.14481013119645005427e-02,
    +2.44030308206595545468e+00)
_K1_A = (  # 11 coefficients
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, +1.52530022733894777053e+00)
_K1_B = (  # 25 coefficients
    -5.75674448366501715755e-18, +1.79405087314755922667e-17, -5.68946255844285935196e-17,
    +1.83809354436663880070e-16, -6.05704724837331885336e-16, +2.03870316562433424052e-15,
    -7.01983709041831346144e-15, +2.47715442448130437068e-14, -8.97670518232499435011e-14,
    +3.34841966607842919884e-13, -1.28917396095102890680e-12, +5.13963967348173025100e-12,
    -2.12996783842756842877e-11, +9.21831518760500529508e-11, -4.19035475934189648750e-10,
    +2.01504975519703286596e-09, -1.03457624656780970260e-08, +5.74108412545004946722e-08,
    -3.50196060308781257119e-07, +2.40648494783721712015e-06, -1.93619797416608296024e-05,
    +1.95215518471351631108e-04, -2.85781685962277938680e-03, +1.03923736576817238437e-01,
    +2.72062619048444266945e+00)


def _bessel_k(x: torch.Tensor, order: int, scaled: bool) -> torch.Tensor:
    small, large = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    near_x = torch.clamp(x, min=1e-30, max=2.0)
    near = _chbevl(near_x * near_x - 2, small)
    near = near - torch.log(near_x / 2) * i0(near_x) if order == 0 else \
        torch.log(near_x / 2) * i1(near_x) + near / near_x
    far_x = torch.clamp(x, min=2.0)
    far = _chbevl(8 / far_x - 2, large) / torch.sqrt(far_x)
    value = torch.where(x <= 2, near * torch.exp(x) if scaled else near, far if scaled else torch.exp(-x) * far)
    value = torch.where(x == 0, torch.full_like(x, math.inf), value)
    return torch.where(x < 0, torch.full_like(x, math.nan), value)


def _bessel_k_op(order: int, scaled: bool):
    def bessel(x):
        return _bessel_k(x, order, scaled)
    return bessel


# Bessel functions of the first and second kind, J0, J1, Y0, Y1, and the Airy function Ai: Cephes'
# rational approximations as torch has them (ATen/native/Math.h), computed in float64. J and Y: in
# x^2 on [0, 5] (Y adding (2/pi) log(x) J), and Hankel's asymptotic form in 25/x^2 beyond.
_J0_PP = (  # 7 coefficients
    +7.96936729297347051624e-04, +8.28352392107440799803e-02, +1.23953371646414299388e+00,
    +5.44725003058768775090e+00, +8.74716500199817011941e+00, +5.30324038235394892183e+00,
    +9.99999999999999997821e-01)
_J0_PQ = (  # 7 coefficients
    +9.24408810558863637013e-04, +8.56288474354474431428e-02, +1.25352743901058953537e+00,
    +5.47097740330417105182e+00, +8.76190883237069594232e+00, +5.30605288235394617618e+00,
    +1.00000000000000000218e+00)
_J0_QP = (  # 8 coefficients
    -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (  # 7 coefficients
    +6.43178256118178023184e+01, +8.56430025976980587198e+02, +3.88240183605401609683e+03,
    +7.24046774195652478189e+03, +5.93072701187316984827e+03, +2.06209331660327847417e+03,
    +2.42005740240291393179e+02)
_J0_RP = (  # 4 coefficients
    -4.79443220978201773821e+09, +1.95617491946556577543e+12, -2.49248344360967716204e+14,
    +9.70862251047306323952e+15)
_J0_RQ = (  # 8 coefficients
    +4.99563147152651017219e+02, +1.73785401676374683123e+05, +4.84409658339962045305e+07,
    +1.11855537045356834862e+10, +2.11277520115489217587e+12, +3.10518229857422583814e+14,
    +3.18121955943204943306e+16, +1.71086294081043136091e+18)
_J0_ZEROS_SQUARED = (5.78318596294678452118e+00, 3.04712623436620863991e+01)  # of J0's first two zeros
_J1_PP = (  # 7 coefficients
    +7.62125616208173112003e-04, +7.31397056940917570436e-02, +1.12719608129684925192e+00,
    +5.11207951146807644818e+00, +8.42404590141772420927e+00, +5.21451598682361504063e+00,
    +1.00000000000000000254e+00)
_J1_PQ = (  # 7 coefficients
    +5.71323128072548699714e-04, +6.88455908754495404082e-02, +1.10514232634061696926e+00,
    +5.07386386128601488557e+00, +8.39985554327604159757e+00, +5.20982848682361821619e+00,
    +9.99999999999999997461e-01)
_J1_QP = (  # 8 coefficients
    +5.10862594750176621635e-02, +4.98213872951233449420e+00, +7.58238284132545283818e+01,
    +3.66779609360150777800e+02, +7.10856304998926107277e+02, +5.97489612400613639965e+02,
    +2.11688757100572135698e+02, +2.52070205858023719784e+01)
_J1_QQ = (  # 7 coefficients
    +7.42373277035675149943e+01, +1.05644886038262816351e+03, +4.98641058337653607651e+03,
    +9.56231892404756170795e+03, +7.99704160447350683650e+03, +2.82619278517639096600e+03,
    +3.36093607810698293419e+02)
_J1_RP = (  # 4 coefficients
    -8.99971225705559398224e+08, +4.52228297998194034323e+11, -7.27494245221818276015e+13,
    +3.68295732863852883286e+15)
_J1_RQ = (  # 8 coefficients
    +6.20836478118054335476e+02, +2.56987256757748830383e+05, +8.35146791431949253037e+07,
    +2.21511595479792499675e+10, +4.74914122079991414898e+12, +7.84369607876235854894e+14,
    +8.95222336184627338078e+16, +5.32278620332680085395e+18)
_J1_ZEROS_SQUARED = (1.46819706421238932572e+01, 4.92184563216946036703e+01)  # of J1's first two zeros
_Y0_YP = (  # 8 coefficients
    +1.55924367855235737965e+04, -1.46639295903971606143e+07, +5.43526477051876500413e+09,
    -9.82136065717911466409e+11, +8.75906394395366999549e+13, -3.46628303384729719441e+15,
    +4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (  # 7 coefficients
    +1.04128353664259848412e+03, +6.26107330137134956842e+05, +2.68919633393814121987e+08,
    +8.64002487103935000337e+10, +2.02979612750105546709e+13, +3.17157752842975028269e+15,
    +2.50596256172653059228e+17)
_Y1_YP = (  # 6 coefficients
    +1.26320474790178026440e+09, -6.47355876379160291031e+11, +1.14509511541823727583e+14,
    -8.12770255501325109621e+15, +2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (  # 8 coefficients
    +5.94301592346128195359e+02, +2.35564092943068577943e+05, +7.34811944459721705660e+07,
    +1.87601316108706159478e+10, +3.88231277496238566008e+12, +6.20557727146953693363e+14,
    +6.87141087355300489866e+16, +3.97270608116560655612e+18)
_BESSEL_SPLIT = 5.0  # the rational approximation up to here, the asymptotic form beyond
_J0_TINY = 1e-5  # J0 is 1 - x^2/4 below this
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_SQRT_TWO_OVER_PI = 0.797884560802865355879892119868763737


def _float64(x: torch.Tensor) -> tuple[torch.Tensor, torch.dtype]:
    """x in float64, and the dtype torch's result has (integers give the default float dtype)."""
    dtype = x.dtype if x.dtype.is_floating_point else torch.get_default_dtype()
    return x.to(torch.float64), dtype


def _hankel(x: torch.Tensor, order: int, second_kind: bool) -> torch.Tensor:
    """J or Y of order 0 or 1 for x > 5: sqrt(2 / (pi x)) (P cos - 5/x Q sin) of x - (2 order + 1) pi/4,
    sin and cos swapped (and the sign) for Y."""
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    x = torch.clamp(x, min=_BESSEL_SPLIT)
    w = 25 / (x * x)
    p = _polynomial(pp, w) / _polynomial(pq, w)
    q = 5 / x * (_polynomial(qp, w) / _polynomial(qq, w))
    phase = x - (2 * order + 1) * math.pi / 4
    value = p * torch.sin(phase) + q * torch.cos(phase) if second_kind else p * torch.cos(phase) - q * torch.sin(phase)
    return value * _SQRT_TWO_OVER_PI / torch.sqrt(x)


def _bessel_j0(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    square = a * a
    near = (square - _J0_ZEROS_SQUARED[0]) * (square - _J0_ZEROS_SQUARED[1]) * _polynomial(_J0_RP, square) \
        / _polynomial(_J0_RQ, square)
    near = torch.where(a < _J0_TINY, 1 - square / 4, near)
    return torch.where(a <= _BESSEL_SPLIT, near, _hankel(a, 0, second_kind=False))


def _bessel_j1(x: torch.Tensor) -> torch.Tensor:
    square = x * x
    near = _polynomial(_J1_RP, square) / _polynomial(_J1_RQ, square) * x * (square - _J1_ZEROS_SQUARED[0]) \
        * (square - _J1_ZEROS_SQUARED[1])  # odd in x, as torch's is
    far = _hankel(torch.abs(x), 1, second_kind=False)
    return torch.where(torch.abs(x) <= _BESSEL_SPLIT, near, torch.where(x < 0, -far, far))


def _bessel_y(x: torch.Tensor, order: int) -> torch.Tensor:
    """Y0 or Y1: -inf at 0, NaN below."""
    near_x = torch.where((x > 0) & (x <= _BESSEL_SPLIT), x, torch.ones_like(x))
    square = near_x * near_x
    if order == 0:
        near = _polynomial(_Y0_YP, square) / _polynomial(_Y0_YQ, square) \
            + _TWO_OVER_PI * torch.log(near_x) * _bessel_j0(near_x)
    else:
        near = near_x * (_polynomial(_Y1_YP, square) / _polynomial(_Y1_YQ, square)) \
            + _TWO_OVER_PI * (_bessel_j1(near_x) * torch.log(near_x) - 1 / near_x)
    value = torch.where(x <= _BESSEL_SPLIT, near, _hankel(x, order, second_kind=True))
    value = torch.where(x == 0, torch.full_like(x, -math.inf), value)
    return torch.where(x < 0, torch.full_like(x, math.nan), value)


def bessel_j0(x: torch.Tensor) -> torch.Tensor:
    x, dtype = _float64(x)
    return _bessel_j0(x).to(dtype)


def bessel_j1(x: torch.Tensor) -> torch.Tensor:
    x, dtype = _float64(x)
    return _bessel_j1(x).to(dtype)


def bessel_y0(x: torch.Tensor) -> torch.Tensor:
    x, dtype = _float64(x)
    return _bessel_y(x, 0).to(dtype)


def bessel_y1(x: torch.Tensor) -> torch.Tensor:
    x, dtype = _float64(x)
    return _bessel_y(x, 1).to(dtype)


# Airy Ai: asymptotic forms with rational corrections below -2.09 (in 1/zeta^2) and from 2.09 up (in
# 1/zeta, zeta = 2/3 x^1.5), the Maclaurin series between; 0 past 103.892, NaN at +-inf.
_AIRY_AN = (  # 8 coefficients
    +3.46538101525629032477e-01, +1.20075952739645805542e+01, +7.62796053615234516538e+01,
    +1.68089224934630576269e+02, +1.59756391350164413639e+02, +7.05360906840444183113e+01,
    +1.40264691163389668864e+01, +9.99999999999999995305e-01)
_AIRY_AD = (  # 8 coefficients
    +5.67594532638770212846e-01, +1.47562562584847203173e+01, +8.45138970141474626562e+01,
    +1.77318088145400459522e+02, +1.64234692871529701831e+02, +7.14778400825575695274e+01,
    +1.40959135607834029598e+01, +1.00000000000000000470e+00)
_AIRY_AFN = (  # 9 coefficients
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AIRY_AFD = (  # 9 coefficients
    +1.33560420706553243746e+01, +3.26825032795224613948e+01, +2.67367040941499554804e+01,
    +9.18707402907259625840e+00, +1.47529146771666414581e+00, +1.15687173795188044134e-01,
    +4.40291641615211203805e-03, +7.54720348287414296618e-05, +4.51850092970580378464e-07)
_AIRY_AGN = (  # 11 coefficients
    +1.97339932091685679179e-02, +3.91103029615688277255e-01, +1.06579897599595591108e+00,
    +9.39169229816650230044e-01, +3.51465656105547619242e-01, +6.33888919628925490927e-02,
    +5.85804113048388458567e-03, +2.82851600836737019778e-04, +6.98793669997260967291e-06,
    +8.11789239554389293311e-08, +3.41551784765923618484e-10)
_AIRY_AGD = (  # 10 coefficients
    +9.30892908077441974853e+00, +1.98352928718312140417e+01, +1.55646628932864612953e+01,
    +5.47686069422975497931e+00, +9.54293611618961883998e-01, +8.64580826352392193095e-02,
    +4.12656523824222607191e-03, +1.01259085116509135510e-04, +1.17166733214413521882e-06,
    +4.91834570062930015649e-09)
_AIRY_SPLIT = 2.09  # the series on (-2.09, 2.09), the asymptotic forms outside
_AIRY_ZERO_FROM = 103.892  # torch's Ai is 0 past this (exp(zeta) overflows float64 just beyond)
_AIRY_SERIES_TERMS = 16  # torch sums until a term is below machine epsilon: at most 12 in float64 at +-2.09
_AIRY_F0, _AIRY_G0 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0), -Ai'(0)
_ONE_OVER_SQRT_PI = 5.64189583547756286948e-01


def _airy_series(x: torch.Tensor) -> torch.Tensor:
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f and g the two Maclaurin series in x^3."""
    z = x * x * x
    f, g, m, n = torch.ones_like(x), x, torch.ones_like(x), x
    for term in range(_AIRY_SERIES_TERMS):
        k = 1 + 3 * term
        m = m * z / ((k + 1) * (k + 2))
        n = n * z / ((k + 2) * (k + 3))
        f, g = f + m, g + n
    return _AIRY_F0 * f - _AIRY_G0 * g


def _airy_negative(x: torch.Tensor) -> torch.Tensor:
    """Ai(x) for x <= -2.09: oscillating, sin and cos of zeta + pi/4."""
    root = torch.sqrt(-x)
    zeta = -2 * x * root / 3
    z = 1 / zeta
    square = z * z
    f = 1 + square * _polynomial(_AIRY_AFN, square) / _polynomial(_AIRY_AFD, square)
    g = z * _polynomial(_AIRY_AGN, square) / _polynomial(_AIRY_AGD, square)
    t = zeta + math.pi / 4
    return _ONE_OVER_SQRT_PI / torch.sqrt(root) * (torch.sin(t) * f - torch.cos(t) * g)


def _airy_positive(x: torch.Tensor) -> torch.Tensor:
    """Ai(x) for x >= 2.09: exp(-zeta) / (2 sqrt(pi) x^(1/4)) times a rational function of 1/zeta."""
    zeta = 2 * x * torch.sqrt(x) / 3
    ratio = _polynomial(_AIRY_AN, 1 / zeta) / _polynomial(_AIRY_AD, 1 / zeta)
    return _ONE_OVER_SQRT_PI * ratio / (2 * torch.sqrt(torch.sqrt(x)) * torch.exp(zeta))


def airy_ai(x: torch.Tensor) -> torch.Tensor:
    x, dtype = _float64(x)
    value = _airy_series(torch.clamp(x, -_AIRY_SPLIT, _AIRY_SPLIT))
    # one two-sided clamp of x at most: the dynamo exporter's optimizer (onnxscript 0.7.2) fuses two on
    # one float64 tensor into Clips and leaves the second's bounds undefined. exp(zeta) overflowing to
    # inf gives 0, so the positive side needs no upper bound.
    value = torch.where(x >= _AIRY_SPLIT, _airy_positive(torch.clamp(x, min=_AIRY_SPLIT)), value)
    value = torch.where(x < -_AIRY_SPLIT, _airy_negative(torch.clamp(x, max=-_AIRY_SPLIT)), value)
    value = torch.where(x > _AIRY_ZERO_FROM, torch.zeros_like(x), value)
    return torch.where(torch.isinf(x), torch.full_like(x, math.nan), value).to(dtype)


# Hermite (H, He), Laguerre and Legendre polynomials of a tensor degree: torch's three-term
# recurrences unrolled to _RECURRENCE_DEGREES, each degree picked where n equals it. torch gives
# NaN past degree 128 for float32 Hermite; past that bound these give NaN for all four.
_RECURRENCE_DEGREES = 128


def _recurrence(x: torch.Tensor, n: torch.Tensor, first: torch.Tensor, step) -> torch.Tensor:
    """P_n(x) for n in 0.._RECURRENCE_DEGREES, from P_0 = 1, P_1 = ``first`` and
    ``P_{k+1} = step(k, P_k, P_{k-1})``; NaN above, 0 for negative n."""
    previous, current = torch.ones_like(x), first
    result = torch.where(n == 0, previous, torch.where(n == 1, current, torch.full_like(x, math.nan)))
    for k in range(1, _RECURRENCE_DEGREES):
        previous, current = current, step(k, current, previous)
        result = torch.where(n == k + 1, current, result)
    return torch.where(n < 0, torch.zeros_like(result), result)


def _degree(x, n) -> tuple[torch.Tensor, torch.Tensor]:
    x, n = torch.as_tensor(x), torch.as_tensor(n)
    dtype = torch.promote_types(x.dtype, n.dtype)
    return x.to(dtype), torch.trunc(n.to(dtype))


def hermite_h(x, n) -> torch.Tensor:
    x, n = _degree(x, n)
    return _recurrence(x, n, x + x, lambda k, q, p: (x + x) * q - (2 * k) * p)


def hermite_he(x, n) -> torch.Tensor:
    x, n = _degree(x, n)
    return _recurrence(x, n, x, lambda k, q, p: x * q - k * p)


def laguerre_l(x, n) -> torch.Tensor:
    x, n = _degree(x, n)
    value = _recurrence(x, n, 1 - x, lambda k, q, p: ((2 * k + (1 - x)) * q - k * p) / (k + 1))
    return torch.where((x == 0) & (n >= 0), torch.ones_like(value), value)


def legendre_p(x, n) -> torch.Tensor:
    x, n = _degree(x, n)
    value = _recurrence(x, n, x, lambda k, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1))
    at_one = torch.where((x > 0) | (torch.remainder(n, 2) == 0), 1.0, -1.0).to(x.dtype)
    return torch.where((torch.abs(x) == 1) & (n >= 0), at_one, value)


SPECIAL_DECOMPOSITIONS = {
    aten.lgamma.default: lgamma,
    aten.digamma.default: digamma,
    aten.polygamma.default: polygamma,
    aten.special_zeta.default: zeta,
    aten.erfinv.default: erfinv,
    aten.special_ndtri.default: ndtri,
    aten.i0.default: i0,
    aten.special_i0e.default: i0e,
    aten.special_i1.default: i1,
    aten.special_i1e.default: i1e,
    aten.special_modified_bessel_i0.default: i0,
    aten.special_modified_bessel_i1.default: i1,
    aten.special_spherical_bessel_j0.default: spherical_bessel_j0,
    aten.special_modified_bessel_k0.default: _bessel_k_op(0, scaled=False),
    aten.special_modified_bessel_k1.default: _bessel_k_op(1, scaled=False),
    aten.special_scaled_modified_bessel_k0.default: _bessel_k_op(0, scaled=True),
    aten.special_scaled_modified_bessel_k1.default: _bessel_k_op(1, scaled=True),
    aten.special_bessel_j0.default: bessel_j0,
    aten.special_bessel_j1.default: bessel_j1,
    aten.special_bessel_y0.default: bessel_y0,
    aten.special_bessel_y1.default: bessel_y1,
    aten.special_airy_ai.default: airy_ai,
    aten.special_hermite_polynomial_h.default: hermite_h,
    aten.special_hermite_polynomial_he.default: hermite_he,
    aten.special_laguerre_polynomial_l.default: laguerre_l,
    aten.special_legendre_polynomial_p.default: legendre_p,
    **{getattr(aten, f"special_{prefix}chebyshev_polynomial_{kind}").default: _chebyshev_op(kind, bool(prefix))
       for kind in "tuvw" for prefix in ("", "shifted_")},
}
