"""setmaxnreg budgets of warp-specialized kernels. A block of 384 threads gets 65536 / 384 = 170,
rounded down to 168 registers a thread at launch; setmaxnreg moves registers between the three
warpgroups, and an .inc that asks for more than the others gave back waits forever (a deadlock
seen on the H200 with 2 x 240 + 40)."""
import tilelang.language as T

NT = 384


def _ws(name, consumer, producer, producer_threads=128):
    @T.prim_func
    def kern(A: T.Tensor((NT,), "float32"), B: T.Tensor((NT,), "float32")):
        with T.Kernel(1, threads=NT) as bx:
            tx = T.get_thread_binding()
            if tx < producer_threads:
                T.set_max_nreg(producer, 0)
                B[tx] = A[tx] + 1.0
            else:
                T.set_max_nreg(consumer, 1)
                B[tx] = A[tx] * 2.0
    return kern.with_attr("global_symbol", name)


def setmaxnreg_over_budget():
    return _ws("setmaxnreg_over_budget", 240, 40)       # 2 x 240 + 40 = 520 > 3 x 168


def setmaxnreg_fits():
    return _ws("setmaxnreg_fits", 232, 40)              # 2 x 232 + 40 = 504 = 3 x 168


def setmaxnreg_split_warpgroup():
    return _ws("setmaxnreg_split_warpgroup", 232, 40, producer_threads=64)   # half a warpgroup decreases


KERNELS = {f.__name__: f for f in (setmaxnreg_over_budget, setmaxnreg_fits, setmaxnreg_split_warpgroup)}
PASS_CONFIGS = {name: {"tl.disable_warp_specialized": True} for name in KERNELS}
EXPECT = {"setmaxnreg_over_budget": "layout.setmaxnreg", "setmaxnreg_fits": None,
          "setmaxnreg_split_warpgroup": "layout.setmaxnreg"}
TWIN = {"setmaxnreg_over_budget": "setmaxnreg_fits", "setmaxnreg_split_warpgroup": "setmaxnreg_fits"}
