"""Opens a USD stage written by `aerie export --for isaac` with Pixar's USD (usd-core), as Isaac Sim loads it.

usage: check_usd.py STAGE.usda VISUAL_POINTS VISUAL_FACES COLLISION_POINTS COLLISION_FACES POINTS
  checks that the stage opens; that it is in metres (GetStageMetersPerUnit 1) with Z up and a default prim;
  that /World/Map and /World/Collision are meshes of the counts given whose topology is valid
  (UsdGeom.Mesh.ValidateTopology), right-handed, with a normal per vertex; that /World/Collision has UsdPhysics'
  CollisionAPI and MeshCollisionAPI applied (approximation "none", collision enabled); that /World/Points holds
  the points given with a width; and that USD's validators (UsdUtils.ComplianceChecker where usd-core has it,
  else every validator of UsdValidation) report no error. Prints one JSON line of figures.
usage: check_usd.py --refuses STAGE.usda
  checks that USD refuses the file (a truncated stage) and prints "refused".
"""

import json
import sys

from pxr import Sdf, Usd, UsdGeom, UsdPhysics


def fail(message):
    sys.exit(f"check_usd.py: {message}")


def check_mesh(stage, path, points, faces):
    prim = stage.GetPrimAtPath(path)
    if not prim or not prim.IsA(UsdGeom.Mesh):
        fail(f"{path} is not a UsdGeom.Mesh")
    mesh = UsdGeom.Mesh(prim)
    vertices = mesh.GetPointsAttr().Get()
    counts = mesh.GetFaceVertexCountsAttr().Get()
    indices = mesh.GetFaceVertexIndicesAttr().Get()
    ok, why = UsdGeom.Mesh.ValidateTopology(indices, counts, len(vertices))
    if not ok:
        fail(f"{path}: ValidateTopology: {why}")
    if (len(vertices), len(counts)) != (points, faces):
        fail(f"{path}: {len(vertices)} points and {len(counts)} faces, expected {points} and {faces}")
    if mesh.GetOrientationAttr().Get() != UsdGeom.Tokens.rightHanded:
        fail(f"{path}: orientation is not rightHanded")
    normals = mesh.GetNormalsAttr().Get()
    if len(normals) != points or mesh.GetNormalsInterpolation() != UsdGeom.Tokens.vertex:
        fail(f"{path}: {len(normals)} normals ({mesh.GetNormalsInterpolation()}), expected one per vertex")
    extent = mesh.GetExtentAttr().Get()
    computed = UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, Usd.TimeCode.Default())
    if extent is None or list(extent) != list(computed):
        fail(f"{path}: extent {extent} is not the points' {computed}")
    return mesh


def validator_errors(stage, path):
    """Errors of USD's own checks: the compliance checker where this usd-core has it, else UsdValidation."""
    try:
        from pxr import UsdUtils

        checker_class = UsdUtils.ComplianceChecker
    except (ImportError, AttributeError):
        checker_class = None
    if checker_class is not None:
        checker = checker_class()
        checker.CheckCompliance(path)
        return list(checker.GetErrors()) + list(checker.GetFailedChecks()), "UsdUtils.ComplianceChecker"
    from pxr import UsdValidation

    registry = UsdValidation.ValidationRegistry()
    validators = registry.GetOrLoadAllValidators()
    context = UsdValidation.ValidationContext(validators)
    errors = [
        f"{e.GetName()}: {e.GetMessage()}"
        for e in context.Validate(stage)
        if e.GetType() == UsdValidation.ValidationErrorType.Error
    ]
    return errors, f"UsdValidation ({len(validators)} validators)"


def main(argv):
    if argv[1] == "--refuses":
        try:
            stage = Usd.Stage.Open(argv[2])
        except Exception as e:  # USD raises Tf.ErrorException
            print("refused:", str(e).splitlines()[0] if str(e) else type(e).__name__)
            return
        if stage is None:
            print("refused")
            return
        fail(f"USD opened the truncated {argv[2]}")
    path = argv[1]
    vp, vf, cp, cf, n = map(int, argv[2:7])
    stage = Usd.Stage.Open(path)
    if stage is None:
        fail(f"USD could not open {path}")
    if UsdGeom.GetStageMetersPerUnit(stage) != 1.0:
        fail(f"metersPerUnit is {UsdGeom.GetStageMetersPerUnit(stage)}")
    if UsdGeom.GetStageUpAxis(stage) != UsdGeom.Tokens.z:
        fail(f"the up axis is {UsdGeom.GetStageUpAxis(stage)}")
    if not stage.GetDefaultPrim() or stage.GetDefaultPrim().GetPath() != Sdf.Path("/World"):
        fail("the default prim is not /World")
    check_mesh(stage, "/World/Map", vp, vf)
    collision = check_mesh(stage, "/World/Collision", cp, cf).GetPrim()
    if not collision.HasAPI(UsdPhysics.CollisionAPI) or not collision.HasAPI(UsdPhysics.MeshCollisionAPI):
        fail(f"/World/Collision applies {collision.GetAppliedSchemas()}, not the collision APIs")
    if not UsdPhysics.CollisionAPI(collision).GetCollisionEnabledAttr().Get():
        fail("/World/Collision has its collision disabled")
    approximation = UsdPhysics.MeshCollisionAPI(collision).GetApproximationAttr().Get()
    if approximation not in ("none", "meshSimplification"):
        fail(f"the collision approximation is {approximation}")
    if stage.GetPrimAtPath("/World/Map").HasAPI(UsdPhysics.CollisionAPI):
        fail("the visual mesh collides too")
    points = UsdGeom.Points(stage.GetPrimAtPath("/World/Points"))
    if not points or len(points.GetPointsAttr().Get()) != n or not points.GetWidthsAttr().Get():
        fail(f"/World/Points does not hold {n} points with a width")
    errors, validator = validator_errors(stage, path)
    if errors:
        fail(f"{validator} reports: " + "; ".join(map(str, errors)))
    print(json.dumps({
        "validator": validator,
        "visual": [vp, vf],
        "collision": [cp, cf],
        "points": n,
        "approximation": approximation,
        "applied": list(collision.GetAppliedSchemas()),
    }))


if __name__ == "__main__":
    main(sys.argv)
