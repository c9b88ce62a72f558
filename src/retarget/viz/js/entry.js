// The parts of three.js the viewer uses (esbuild keeps only these); GLTFLoader and
// AnimationMixer for characters (glTF) and for the tests' reference evaluation of them.
export {
  AmbientLight,
  AnimationMixer,
  BoxGeometry,
  BufferAttribute,
  BufferGeometry,
  Color,
  CylinderGeometry,
  DirectionalLight,
  DoubleSide,
  InstancedMesh,
  LineBasicMaterial,
  LineSegments,
  LoopOnce,
  Matrix4,
  Mesh,
  MeshLambertMaterial,
  PerspectiveCamera,
  Quaternion,
  REVISION,
  Scene,
  SphereGeometry,
  Vector3,
  WebGLRenderer,
} from "three";
export { GLTFLoader } from "three/examples/jsm/loaders/GLTFLoader.js";
